package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// wireguardComponent is semaphore-wireguard's ControllerState.Component.
const wireguardComponent = "semaphore-wireguard"

// NodeWireGuard is what one node's semaphore-wireguard reports through its metrics, with the
// endpoints its peers publish.
type NodeWireGuard struct {
	Node    NodeState
	Devices []WGDevice
	Err     error // the metrics could not be read
}

// WGDevice is a node's WireGuard device for one remote cluster.
type WGDevice struct {
	Name, Remote string
	Peers        []WGPeer
}

// WGPeer is one peer of a device: a node of the remote cluster.
type WGPeer struct {
	Node string
	// Endpoint is the one the remote Node publishes for this cluster ("" when it has none).
	Endpoint string
	// Handshake is the last handshake; zero before the first.
	Handshake time.Time
}

// collectWireGuard reads every node's devices and peers from its controller's metrics, and
// the peers' endpoints from their Node objects.
func collectWireGuard(ctx context.Context, st *State) []NodeWireGuard {
	if st.Nodes == nil || st.Nodes.Skipped != "" {
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	// The annotations of every Node, by cluster and node; a cluster that cannot be read shows
	// no endpoints.
	annotations := map[string]map[string]map[string]string{}
	for _, c := range st.Clusters {
		wg.Go(func() {
			a, err := nodeAnnotations(ctx, c.DirectKubeconfig)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			annotations[c.Name] = a
		})
	}
	out := make([]NodeWireGuard, len(st.Nodes.Nodes))
	for i, n := range st.Nodes.Nodes {
		out[i].Node = n
		ci := slices.IndexFunc(st.Controllers, func(c ControllerState) bool {
			return c.Component == wireguardComponent && c.Node == n.Name
		})
		if ci < 0 {
			out[i].Err = fmt.Errorf("semaphore-wireguard does not run")
			continue
		}
		wg.Go(func() {
			ss, err := scrapeMetrics(ctx, st.Controllers[ci].Admin)
			if err != nil {
				out[i].Err = err
				return
			}
			out[i].Devices = wgDevices(n, ss)
		})
	}
	wg.Wait()
	for i := range out {
		for d := range out[i].Devices {
			dev := &out[i].Devices[d]
			for p := range dev.Peers {
				peer := &dev.Peers[p]
				peer.Endpoint = annotations[dev.Remote][peer.Node][peers.EndpointAnnotation(out[i].Node.Cluster)]
			}
		}
	}
	return out
}

// wgDevices are node n's devices, one per remote, from its controller's samples.
func wgDevices(n NodeState, ss []testenv.Sample) []WGDevice {
	var out []WGDevice
	for _, r := range remotesOf(n.Cluster) {
		d := WGDevice{Name: peers.DeviceName(r), Remote: r}
		for _, s := range ss {
			switch {
			case s.Name == "semaphore_wg_peers" && s.Labels["remote"] == r && s.Labels["device"] != "":
				d.Name = s.Labels["device"]
			case s.Name == "semaphore_wg_peer_last_handshake_timestamp_seconds" && s.Labels["remote"] == r:
				p := WGPeer{Node: s.Labels["peer"]}
				if s.Value > 0 {
					p.Handshake = time.Unix(0, int64(s.Value*1e9))
				}
				d.Peers = append(d.Peers, p)
			}
		}
		slices.SortFunc(d.Peers, func(a, b WGPeer) int { return strings.Compare(a.Node, b.Node) })
		out = append(out, d)
	}
	return out
}

// nodeAnnotations are the annotations of every Node of a cluster, by name.
func nodeAnnotations(ctx context.Context, kubeconfig string) (map[string]map[string]string, error) {
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.Annotations
	}
	return out, nil
}

// wireguardProblems: every node runs semaphore-wireguard, whose device for each remote has
// every node of the remote as a peer and has shaken hands with each.
func wireguardProblems(st *State, s *Status) []string {
	if st.Nodes == nil || st.Nodes.Skipped != "" {
		return nil
	}
	var problems []string
	for _, n := range s.WireGuard {
		if n.Err != nil {
			problems = append(problems, fmt.Sprintf("semaphore-wireguard on %s: %v", n.Node.Name, n.Err))
			continue
		}
		for _, d := range n.Devices {
			var want, got []string
			for i := range nodesPerCluster {
				want = append(want, nodeName(d.Remote, i))
			}
			for _, p := range d.Peers {
				got = append(got, p.Node)
			}
			if !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s: %s has peers %v, want %v (the nodes of %s)", n.Node.Name, d.Name, got, want, d.Remote))
			}
			for _, p := range d.Peers {
				if p.Handshake.IsZero() {
					problems = append(problems, fmt.Sprintf("%s: %s has not shaken hands with %s", n.Node.Name, d.Name, p.Node))
				}
			}
		}
	}
	return problems
}

// printWireGuard prints every node's devices and peers, or why the lab has no nodes.
func printWireGuard(w io.Writer, st *State, s *Status) {
	if st.Nodes == nil {
		return // a lab that has not got as far as its nodes
	}
	if st.Nodes.Skipped != "" {
		section(w, "WireGuard (semaphore-wireguard on nodes as network namespaces)")
		fmt.Fprintf(w, "  skipped: %s\n", st.Nodes.Skipped)
		return
	}
	section(w, fmt.Sprintf("WireGuard (semaphore-wireguard on every node; the nodes are network namespaces %s<cluster>-<n> on the underlay %s)", netnsPrefix, st.Nodes.Underlay))
	tw := table(w)
	fmt.Fprintf(tw, "  node\tunderlay\tpods\tdevice\tpeer\tendpoint\tlast handshake\n")
	for _, n := range s.WireGuard {
		node := fmt.Sprintf("  %s\t%s\t%s", n.Node.Name, n.Node.Underlay, n.Node.PodCIDR)
		if n.Err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\n", node, n.Err)
			continue
		}
		for _, d := range n.Devices {
			dev := d.Name
			if len(d.Peers) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t(no peers)\n", node, dev)
				node = "  \t\t"
			}
			for _, p := range d.Peers {
				endpoint := p.Endpoint
				if endpoint == "" {
					endpoint = "(none published)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", node, dev, p.Node, endpoint, handshakeAge(p.Handshake))
				node, dev = "  \t\t", ""
			}
		}
	}
	tw.Flush()
}

// handshakeAge is how long ago t was: "12s ago", or "never" for the zero time.
func handshakeAge(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%s ago", max(time.Since(t), 0).Round(time.Second))
}

// scrapeMetrics reads the samples of the semaphore_wg_ metrics from the admin server at addr.
func scrapeMetrics(ctx context.Context, addr string) ([]testenv.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return testenv.Scrape(ctx, http.DefaultClient, "http://"+addr+"/metrics", "semaphore_wg_")
}
