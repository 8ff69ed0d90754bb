package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// The ping: an ICMP echo from a sample pod's address in one cluster to one in another, sent
// from inside the source pod's node. Each node has a route to its own pods only, so the reply
// comes back only when WireGuard carries both ways: semaphore-wireguard has set up the devices,
// their peers and their routes on both nodes, and the nodes have shaken hands.

// pingTimeout is how long one ping waits for its reply. waitReady pings again until the lab's
// timeout.
const pingTimeout = time.Second

// PingStatus is one ping and how it went.
type PingStatus struct {
	From, To pingEnd
	// Device is the one the source's node routes the destination through ("" when unknown).
	Device string
	RTT    time.Duration
	Err    error
	// NotChecked says why this process did not ping: only root can, from inside the nodes.
	NotChecked string
}

// pingEnd is a pod address on a node.
type pingEnd struct {
	Cluster, What, Addr string
	Node                NodeState
	Pod                 string // the pod's name, when it is a pod of the lab
}

func (e pingEnd) String() string {
	where := e.Node.Name
	if e.Pod != "" {
		where = e.Pod + " on " + where
	}
	return fmt.Sprintf("%s %s %s (%s)", e.Cluster, e.What, e.Addr, where)
}

// labPings are the pings the lab checks: from the first forwarder pod in gcp to fluentd's
// first endpoint in aws, the path of the blog's logs, and back.
func labPings(nodes []NodeState) []PingStatus {
	node := func(name string) NodeState {
		i := slices.IndexFunc(nodes, func(n NodeState) bool { return n.Name == name })
		if i < 0 {
			return NodeState{Name: name}
		}
		return nodes[i]
	}
	forwarder := pingEnd{
		Cluster: forwarderCluster, What: "pod", Addr: podIP(forwarderCluster, 0),
		Node: node(sampleNode(forwarderCluster, 0)), Pod: fmt.Sprintf("%s-%d", forwarderName, 0),
	}
	fluentd := pingEnd{
		Cluster: fluentdCluster, What: fluentdName + " endpoint", Addr: podIP(fluentdCluster, 0),
		Node: node(sampleNode(fluentdCluster, 0)),
	}
	return []PingStatus{{From: forwarder, To: fluentd}, {From: fluentd, To: forwarder}}
}

// collectPings pings, in parallel.
func collectPings(st *State) []PingStatus {
	if st.Nodes == nil || st.Nodes.Skipped != "" {
		return nil
	}
	pings := labPings(st.Nodes.Nodes)
	var wg sync.WaitGroup
	for i := range pings {
		p := &pings[i]
		if os.Geteuid() != 0 {
			p.NotChecked = "only root can ping from inside the nodes' network namespaces"
			continue
		}
		wg.Go(func() {
			p.RTT, p.Err = pingInNetns(p.From.Node.Netns, p.From.Addr, p.To.Addr, pingTimeout)
			p.Device = routeDevice(p.From.Node.Netns, p.From.Addr, p.To.Addr)
		})
	}
	wg.Wait()
	return pings
}

// routeDevice is the device through which netns routes packets from src to dst, "" when ip
// cannot tell.
func routeDevice(netns, src, dst string) string {
	out, err := exec.Command("ip", "-n", netns, "-o", "route", "get", dst, "from", src).Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if i := slices.Index(f, "dev"); i >= 0 && i+1 < len(f) {
		return f[i+1]
	}
	return ""
}

// pingProblems: every ping that was sent was answered, and went through the source node's
// WireGuard device for the destination's cluster.
func pingProblems(s *Status) []string {
	var problems []string
	for _, p := range s.Pings {
		switch want := peers.DeviceName(p.To.Cluster); {
		case p.NotChecked != "":
		case p.Err != nil:
			problems = append(problems, fmt.Sprintf("ping %s -> %s: %v", p.From, p.To, p.Err))
		case p.Device != want:
			problems = append(problems, fmt.Sprintf("ping %s -> %s went through %q, not %s", p.From, p.To, p.Device, want))
		}
	}
	return problems
}

// printPings prints how the pings went, or why there are none.
func printPings(w io.Writer, st *State, s *Status) {
	if st.Nodes == nil {
		return
	}
	section(w, "Ping (ICMP echo between pod addresses of two clusters, from inside the nodes)")
	if st.Nodes.Skipped != "" {
		fmt.Fprintf(w, "  skipped: %s\n", st.Nodes.Skipped)
		return
	}
	for _, p := range s.Pings {
		through := ""
		if p.Device != "" {
			through = " through " + p.Device
		}
		var result string
		switch {
		case p.NotChecked != "":
			result = "not checked: " + p.NotChecked
		case p.Err != nil:
			result = "FAILED: " + p.Err.Error()
		default:
			result = fmt.Sprintf("ok, %.1f ms", float64(p.RTT.Microseconds())/1000)
		}
		fmt.Fprintf(w, "  %s -> %s%s: %s\n", p.From, p.To, through, result)
	}
}
