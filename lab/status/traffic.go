package status

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// The user's path, end to end: gcp's forwarder pods send requests to
// fluentd.sys-log.svc.cluster.aws:8888, which gcp's CoreDNS resolves to fluentd's mirror, whose
// ClusterIP kube-proxy on the forwarder's node sends to a fluentd pod in aws, through the
// node's WireGuard device for aws. fluentd logs every request with the address of the
// connection's client: it must be the forwarder pod's own, which shows that nothing on the way
// translated it. The kubelet writes fluentd's output to the node's /var/log/pods, read here.

// TrafficStatus is what fluentd logged of one forwarder pod's requests.
type TrafficStatus struct {
	Forwarder layout.Pod
	// Requests is how many requests fluentd's pods logged with the forwarder's address as
	// client; Fluentd are the pods that logged them.
	Requests int
	Fluentd  []string
	// Device is the device the forwarder's node routes fluentd's pods through, and Via the
	// next hop ("" for none); ReturnDevice the device fluentd's nodes route the forwarder
	// through.
	Device, Via, ReturnDevice string
	// Gateway is, when the forwarders' cluster reaches fluentd's through gateways, its active
	// gateway toward it ("" when none says it is): the forwarder's node, or its next hop.
	Gateway layout.Node
}

// TrafficLog is what fluentd logged, by client address, and what could not be read.
type TrafficLog struct {
	Traffic []TrafficStatus
	// Fluentd are fluentd's pods, with the IPAM block their addresses are from.
	Fluentd []BlockAddr
	// Reach are pings from the forwarders' nodes to a pod in a block affine to its node.
	Reach []ReachStatus
	// Strangers are client addresses fluentd logged that are no pod's of the forwarders'
	// cluster: addresses translated on the way. (A forwarder that is gone, one a scenario
	// added and removed, has a pod address and is no stranger.)
	Strangers []string
	Err       error
	// BlocksErr is why the Calico-way cluster's IPAM blocks could not be read; then neither
	// Fluentd nor Reach is known.
	BlocksErr error
}

// BlockAddr is a pod of the Calico-way cluster and the IPAM block its address is from.
type BlockAddr struct {
	Pod   layout.Pod
	Block IPAMBlock
}

// Borrowed tells whether the pod's address is from a block affine to another node.
func (b BlockAddr) Borrowed() bool { return b.Block.Node != "" && b.Block.Node != b.Pod.Node }

// ReachStatus is a ping from a forwarder, inside its pod's network namespace (From is its
// node), to a pod of the Calico-way cluster: the Calico-way cluster's device for the
// forwarders' cluster takes only the pod CIDRs of its nodes, not their InternalIPs, so only a
// pod address reaches it and back.
type ReachStatus struct {
	From, Src string
	To        BlockAddr
	RTT       time.Duration
	Err       error
	pod       string // the forwarder's UID
}

// collectTraffic reads fluentd's logs, the routes between the forwarders and fluentd, and
// through blocks the IPAM blocks of fluentd's pods.
func collectTraffic(ctx context.Context, rec *layout.Record, blocks *calicoBlocks) *TrafficLog {
	if rec.Nodes == nil || rec.NodesSkipped() {
		return nil
	}
	out := &TrafficLog{}
	byClient := map[string]map[string]int{} // client -> fluentd pod -> requests
	fluentd := rec.PodsOf(layout.FluentdCluster, layout.FluentdName)
	for _, f := range fluentd {
		if err := readRequests(f, byClient); err != nil {
			out.Err = err
		}
	}
	forwarders := rec.PodsOf(layout.ForwarderCluster, layout.ForwarderName)
	gateway := forwardersGateway(ctx, rec)
	for _, fw := range forwarders {
		t := TrafficStatus{Forwarder: fw}
		for pod, n := range byClient[fw.IP] {
			t.Requests += n
			t.Fluentd = append(t.Fluentd, pod)
		}
		slices.Sort(t.Fluentd)
		if len(fluentd) > 0 {
			t.Device, t.Via = route(rec.NetnsOf(fw.Node), fluentd[0].IP)
			t.ReturnDevice, _ = route(rec.NetnsOf(fluentd[0].Node), fw.IP)
		}
		t.Gateway = gateway
		out.Traffic = append(out.Traffic, t)
	}
	if ipam := blocks.read(ctx, rec); ipam.err != nil {
		out.BlocksErr = ipam.err
	} else {
		out.Fluentd = blockAddrs(ipam, fluentd)
		out.Reach = reachBlocks(rec, ipam, forwarders)
	}
	pods := netip.MustParsePrefix(layout.SpecOf(layout.ForwarderCluster).PodCIDR)
	for client := range byClient {
		if a, err := netip.ParseAddr(client); err != nil || !pods.Contains(a) {
			out.Strangers = append(out.Strangers, client)
		}
	}
	slices.Sort(out.Strangers)
	return out
}

// blockAddrs are pods, with the block of ipam each one's address is from.
func blockAddrs(ipam calicoIPAM, pods []layout.Pod) []BlockAddr {
	var out []BlockAddr
	for _, p := range pods {
		a, _ := netip.ParseAddr(p.IP)
		b, _ := ipam.blockOf(a)
		out = append(out, BlockAddr{p, b})
	}
	return out
}

// reachBlocks pings, from every node of the forwarders, a pod of the Calico-way cluster on its
// first node whose address is from a block affine to that node: the way to the blocks beside
// the borrowed addresses fluentd's traffic takes. None when no such pod has an address.
func reachBlocks(rec *layout.Record, ipam calicoIPAM, forwarders []layout.Pod) []ReachStatus {
	var to *BlockAddr
	for _, p := range rec.Pods {
		if p.Cluster != layout.CalicoCluster || p.Node != layout.NodeName(layout.CalicoCluster, 0) || (to != nil && p.Name >= to.Pod.Name) {
			continue
		}
		a, err := netip.ParseAddr(p.IP)
		if b, ok := ipam.blockOf(a); err == nil && ok && b.Node == p.Node {
			to = &BlockAddr{p, b}
		}
	}
	if to == nil {
		return nil
	}
	var out []ReachStatus
	for _, f := range forwarders {
		out = append(out, ReachStatus{From: f.Node, Src: f.IP, To: *to, pod: f.UID})
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			// From inside the forwarder: only its own cluster's pod addresses cross the tunnel.
			netns, err := testbed.PodNetns(out[i].pod)
			if out[i].Err = err; err == nil {
				out[i].RTT, out[i].Err = testbed.Ping(netns, out[i].Src, out[i].To.Pod.IP, time.Second)
			}
		})
	}
	wg.Wait()
	return out
}

// readRequests counts the requests fluentd pod f logged, by client, into byClient.
func readRequests(f layout.Pod, byClient map[string]map[string]int) error {
	records, err := podlog.Read(f.Log)
	if err != nil {
		return fmt.Errorf("fluentd's log: %w", err)
	}
	for _, r := range records {
		if r.Msg != "request" {
			continue
		}
		if byClient[r.Client] == nil {
			byClient[r.Client] = map[string]int{}
		}
		byClient[r.Client][f.Name]++
	}
	return nil
}

// route is the device through which netns routes packets to dst, and the next hop ("" when
// there is none, or ip cannot tell).
func route(netns, dst string) (dev, via string) {
	out, err := exec.Command("ip", "-n", netns, "-o", "route", "get", dst).Output()
	if err != nil {
		return "", ""
	}
	f := strings.Fields(string(out))
	after := func(word string) string {
		if i := slices.Index(f, word); i >= 0 && i+1 < len(f) {
			return f[i+1]
		}
		return ""
	}
	return after("dev"), after("via")
}

// forwardersGateway is, when the forwarders' cluster reaches fluentd's through gateways, the
// node that says it is its active gateway toward it (zero in the mesh, or when none does).
func forwardersGateway(ctx context.Context, rec *layout.Record) layout.Node {
	if !layout.SpecOf(layout.ForwarderCluster).Gateways {
		return layout.Node{}
	}
	name, _ := ActiveGateway(ctx, rec, layout.ForwarderCluster, layout.FluentdCluster)
	for _, n := range rec.Nodes.Nodes {
		if n.Name == name {
			return n
		}
	}
	return layout.Node{}
}

// TrafficProblems reads the traffic part of the status alone, and returns its problems.
func TrafficProblems(rec *layout.Record) []string {
	t := &trafficStatus{}
	t.collect(context.Background(), rec)
	return t.problems(rec)
}

// trafficStatus is the traffic between the forwarders and fluentd (nil without nodes).
type trafficStatus struct {
	log    *TrafficLog
	blocks *calicoBlocks // shared with the other parts of a collection; nil reads its own
}

func (s *trafficStatus) collect(ctx context.Context, rec *layout.Record) {
	s.log = collectTraffic(ctx, rec, s.blocks)
}

// problems: fluentd logged requests from every forwarder pod, with the pod's own address, none
// from any other address, and each way goes through the WireGuard device of the other cluster.
func (s *trafficStatus) problems(*layout.Record) []string {
	t := s.log
	if t == nil {
		return nil
	}
	var problems []string
	if t.Err != nil {
		problems = append(problems, t.Err.Error())
	}
	if t.BlocksErr != nil {
		problems = append(problems, fmt.Sprintf("the blocks of fluentd's pods are not checked: %v", t.BlocksErr))
	}
	for _, f := range t.Traffic {
		if f.Requests == 0 {
			problems = append(problems, fmt.Sprintf("fluentd logged no request from %s (%s) yet", f.Forwarder.Name, f.Forwarder.IP))
		}
		problems = append(problems, f.routeProblems()...)
		if want := peers.DeviceName(layout.ForwarderCluster); f.ReturnDevice != want {
			problems = append(problems, fmt.Sprintf("fluentd's node routes %s through %q, not %s", f.Forwarder.Name, f.ReturnDevice, want))
		}
	}
	for _, f := range t.Fluentd {
		if !f.Borrowed() {
			problems = append(problems, fmt.Sprintf("fluentd pod %s (%s on %s) is in %s: not a borrowed address", f.Pod.Name, f.Pod.IP, f.Pod.Node, f.Block))
		}
	}
	for _, r := range t.Reach {
		if r.Err != nil {
			problems = append(problems, fmt.Sprintf("%s cannot reach %s (%s on %s, block %s): %v", r.From, r.To.Pod.Name, r.To.Pod.IP, r.To.Pod.Node, r.To.Block, r.Err))
		}
	}
	if len(t.Strangers) > 0 {
		problems = append(problems, fmt.Sprintf("fluentd logged requests from %v, which is no address of %s's pods: translated on the way", t.Strangers, layout.ForwarderCluster))
	}
	return problems
}

// print prints what fluentd logged of the forwarders' requests.
func (s *trafficStatus) print(w io.Writer, rec *layout.Record) {
	if rec.Nodes == nil {
		return
	}
	section(w, fmt.Sprintf("Traffic (%s/%s pods -> http://%s.%s.svc.cluster.%s:%d/, as logged by %s/%s)",
		layout.ForwarderCluster, layout.ForwarderName, layout.FluentdName, layout.SampleNamespace, layout.FluentdCluster, layout.FluentdPort, layout.FluentdCluster, layout.FluentdName))
	if rec.Nodes.Skipped != "" {
		fmt.Fprintf(w, "  skipped: %s\n", rec.Nodes.Skipped)
		return
	}
	logged := s.log
	if logged == nil {
		return
	}
	for _, t := range logged.Traffic {
		fmt.Fprintf(w, "  %s (%s on %s): %d requests logged by %v with client %s, via %s, back via %s\n",
			t.Forwarder.Name, t.Forwarder.IP, t.Forwarder.Node, t.Requests, t.Fluentd, t.Forwarder.IP, t.Device, t.ReturnDevice)
	}
	for _, f := range logged.Fluentd {
		how := "from its node's calico-ipam block"
		if f.Borrowed() {
			how = "borrowed from calico-ipam's block"
		}
		fmt.Fprintf(w, "  %s %s on %s: %s %s\n", f.Pod.Name, f.Pod.IP, f.Pod.Node, how, f.Block)
	}
	for _, r := range logged.Reach {
		result := fmt.Sprintf("ping %s", r.RTT.Round(10*time.Microsecond))
		if r.Err != nil {
			result = "error: " + r.Err.Error()
		}
		fmt.Fprintf(w, "  %s (%s) -> %s/%s %s on %s (block %s): %s\n", r.From, r.Src, r.To.Pod.Namespace, r.To.Pod.Name, r.To.Pod.IP, r.To.Pod.Node, r.To.Block.CIDR, result)
	}
	for _, err := range []error{logged.Err, logged.BlocksErr} {
		if err != nil {
			fmt.Fprintf(w, "  error: %v\n", err)
		}
	}
}

// routeProblems: the forwarder's node routes fluentd's pods through the WireGuard device of
// fluentd's cluster, or, when its cluster reaches that one through gateways and it is not the
// active gateway, to the active gateway over its own network; fluentd's node routes the
// forwarder through the device of the forwarders' cluster.
func (f TrafficStatus) routeProblems() []string {
	var problems []string
	switch gateway := f.Gateway; {
	case layout.SpecOf(layout.ForwarderCluster).Gateways && gateway.Name == "":
		problems = append(problems, fmt.Sprintf("no node of %s says it is the active gateway toward %s", layout.ForwarderCluster, layout.FluentdCluster))
	case gateway.Name != "" && gateway.Name != f.Forwarder.Node:
		if f.Via != gateway.InternalIP {
			problems = append(problems, fmt.Sprintf("%s routes fluentd's pods via %q (%s), not to the active gateway %s (%s)",
				f.Forwarder.Node, f.Via, f.Device, gateway.Name, gateway.InternalIP))
		}
	default:
		if want := peers.DeviceName(layout.FluentdCluster); f.Device != want {
			problems = append(problems, fmt.Sprintf("%s routes fluentd's pods through %q, not %s", f.Forwarder.Node, f.Device, want))
		}
	}
	return problems
}
