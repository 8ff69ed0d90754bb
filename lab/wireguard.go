package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/testbed"
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
	// AllowedErr is why the peers' allowed IPs could not be read from the device.
	AllowedErr error
}

// WGPeer is one peer of a device: a node of the remote cluster.
type WGPeer struct {
	Node string
	// Endpoint is the one the remote Node publishes for this cluster ("" when it has none).
	Endpoint string
	// Handshake is the last handshake; zero before the first.
	Handshake time.Time
	// AllowedIPs are the peer's allowed IPs on the device (and so the routes to it), sorted.
	AllowedIPs []string
}

// collectWireGuard reads every node's devices and peers from its controller's metrics, the
// peers' allowed IPs from the devices, and the peers' endpoints and keys from their Node
// objects.
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
	allowed := map[[2]string]map[string][]string{} // node, device -> public key -> allowed IPs
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
			root, err := cachedContainerRoot(st.Controllers[ci].PodUID)
			for d := range out[i].Devices {
				dev := &out[i].Devices[d]
				if dev.AllowedErr = err; err != nil {
					continue
				}
				var ips map[string][]string
				ips, dev.AllowedErr = deviceAllowedIPs(root, dev.Name)
				mu.Lock()
				allowed[[2]string{n.Name, dev.Name}] = ips
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range out {
		for d := range out[i].Devices {
			dev := &out[i].Devices[d]
			for p := range dev.Peers {
				peer := &dev.Peers[p]
				a := annotations[dev.Remote][peer.Node]
				peer.Endpoint = a[peers.EndpointAnnotation(out[i].Node.Cluster)]
				if key := a[peers.PubKeyAnnotation(out[i].Node.Cluster)]; key != "" {
					peer.AllowedIPs = allowed[[2]string{out[i].Node.Name, dev.Name}][key]
				}
			}
		}
	}
	return out
}

// roots are the containers' roots by pod UID: containerRoot reads every process's cgroups.
var roots sync.Map

func cachedContainerRoot(uid string) (string, error) {
	if r, ok := roots.Load(uid); ok {
		if _, err := os.Stat(filepath.Join(r.(string), serviceAccountDir)); err == nil {
			return r.(string), nil
		}
	}
	r, err := containerRoot(uid)
	if err == nil {
		roots.Store(uid, r)
	}
	return r, err
}

// deviceAllowedIPs reads the allowed IPs of every peer of device name, by public key (base64),
// from its UAPI socket in the container whose root is root: the embedded (userspace)
// WireGuard's, which the chart keeps in the container's /var/run/wireguard.
func deviceAllowedIPs(root, name string) (map[string][]string, error) {
	return testbed.WireGuardAllowedIPs(filepath.Join(root, "/var/run/wireguard", name+".sock"))
}

// wantAllowedIPs are the allowed IPs a device for remote must give the peer for node: the
// node's pod CIDR, or in the Calico-way cluster the blocks affine to it and the addresses its
// pods borrowed.
func wantAllowedIPs(st *State, remote, node string) []string {
	if remote == calicoCluster {
		return calicoPeerPrefixes(st, node)
	}
	for _, n := range st.Nodes.Nodes {
		if n.Name == node {
			return []string{n.PodCIDR}
		}
	}
	return nil
}

// wgDevices are node n's devices, one per remote, from its controller's samples.
func wgDevices(n NodeState, ss []testbed.Sample) []WGDevice {
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

// wireguardStatus is every node's semaphore-wireguard: its devices and their peers.
type wireguardStatus struct {
	nodes []NodeWireGuard
}

func (s *wireguardStatus) collect(ctx context.Context, st *State) {
	s.nodes = collectWireGuard(ctx, st)
}

// problems: every node runs semaphore-wireguard, whose device for each remote has every node
// of the remote as a peer, with the allowed IPs of wantAllowedIPs, and has shaken hands with
// each.
func (s *wireguardStatus) problems(st *State) []string {
	if st.Nodes == nil || st.Nodes.Skipped != "" {
		return nil
	}
	var problems []string
	for _, n := range s.nodes {
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
				if want := wantAllowedIPs(st, d.Remote, p.Node); d.AllowedErr == nil && !slices.Equal(p.AllowedIPs, want) {
					problems = append(problems, fmt.Sprintf("%s: %s gives %s allowed IPs %v, want %v", n.Node.Name, d.Name, p.Node, p.AllowedIPs, want))
				}
			}
			if d.AllowedErr != nil {
				problems = append(problems, fmt.Sprintf("%s: reading the peers of %s: %v", n.Node.Name, d.Name, d.AllowedErr))
			}
		}
	}
	return problems
}

// print prints every node's devices and peers, or why the lab has no nodes.
func (s *wireguardStatus) print(w io.Writer, st *State) {
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
	fmt.Fprintf(tw, "  node\tunderlay\tpods\tdevice\tpeer\tendpoint\tlast handshake\tallowed IPs\n")
	for _, n := range s.nodes {
		node := fmt.Sprintf("  %s\t%s\t%s", n.Node.Name, n.Node.Underlay, podsColumn(n.Node))
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
				ips := strings.Join(p.AllowedIPs, ",")
				if d.AllowedErr != nil {
					ips = "error: " + d.AllowedErr.Error()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", node, dev, p.Node, endpoint, handshakeAge(p.Handshake), ips)
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
func scrapeMetrics(ctx context.Context, addr string) ([]testbed.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return testbed.Scrape(ctx, http.DefaultClient, "http://"+addr+"/metrics", "semaphore_wg_")
}
