package status

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// NodeWireGuard is what one node's semaphore-wireguard reports through its metrics, with the
// endpoints its peers publish.
type NodeWireGuard struct {
	Node    layout.Node
	Devices []WGDevice
	Err     error // the metrics could not be read
}

// WGDevice is a node's WireGuard device for one remote cluster.
type WGDevice struct {
	Name, Remote string
	// Role is the node's role toward the remote when its cluster reaches the remote through
	// gateways: active, standby or member ("" in the mesh).
	Role string
	// Gateway is, when the remote reaches this cluster through gateways, the remote's node
	// that says it is the active gateway toward this cluster ("" when none does).
	Gateway string
	Peers   []WGPeer
	// AllowedErr is why the peers' allowed IPs could not be read from the device.
	AllowedErr error
	// allowed are the allowed IPs of every peer on the device, by public key.
	allowed map[string][]string
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
func collectWireGuard(ctx context.Context, rec *layout.Record) []NodeWireGuard {
	if rec.Nodes == nil || rec.NodesSkipped() {
		return nil
	}
	var annotations map[string]map[string]map[string]string
	done := make(chan struct{})
	go func() {
		defer close(done)
		annotations = allNodeAnnotations(ctx, rec)
	}()
	out := make([]NodeWireGuard, len(rec.Nodes.Nodes))
	var wg sync.WaitGroup
	for i, n := range rec.Nodes.Nodes {
		out[i].Node = n
		ci := slices.IndexFunc(rec.Controllers, func(c layout.Controller) bool {
			return c.Component == layout.WireGuardComponent && c.Node == n.Name
		})
		if ci < 0 {
			out[i].Err = fmt.Errorf("semaphore-wireguard does not run")
			continue
		}
		wg.Go(func() { out[i].Devices, out[i].Err = readDevices(ctx, n, rec.Controllers[ci]) })
	}
	wg.Wait()
	<-done
	for i := range out {
		for d := range out[i].Devices {
			dev := &out[i].Devices[d]
			dev.Gateway = activeGateway(annotations[dev.Remote], out[i].Node.Cluster)
			for p := range dev.Peers {
				peer := &dev.Peers[p]
				a := annotations[dev.Remote][peer.Node]
				peer.Endpoint = a[peers.EndpointAnnotation(out[i].Node.Cluster)]
				if key := a[peers.PubKeyAnnotation(out[i].Node.Cluster)]; key != "" {
					peer.AllowedIPs = dev.allowed[key]
				}
			}
		}
	}
	return out
}

// activeGateway is the node, of those whose annotations are given, that says it is the active
// gateway toward cluster, as the agents read it ("" when none does).
func activeGateway(annotations map[string]map[string]string, cluster string) string {
	var nodes []peers.Node
	for name, a := range annotations {
		nodes = append(nodes, peers.Node{Name: name, Annotations: a})
	}
	active, found, _ := peers.ActiveGateway(cluster, nodes)
	if !found {
		return ""
	}
	return active.Name
}

// ActiveGateway is the node of cluster that says it is its active gateway toward remote, as
// the agents read it; an error when none does, or the Nodes cannot be read.
func ActiveGateway(ctx context.Context, rec *layout.Record, cluster, remote string) (string, error) {
	i := slices.IndexFunc(rec.Clusters, func(c layout.ClusterRecord) bool { return c.Name == cluster })
	if i < 0 {
		return "", fmt.Errorf("no cluster %s recorded", cluster)
	}
	annotations, err := nodeAnnotations(ctx, rec.Clusters[i].DirectKubeconfig)
	if err != nil {
		return "", fmt.Errorf("%s's Nodes: %w", cluster, err)
	}
	gw := activeGateway(annotations, remote)
	if gw == "" {
		return "", fmt.Errorf("no node of %s says it is the active gateway toward %s", cluster, remote)
	}
	return gw, nil
}

// allNodeAnnotations are the annotations of every Node, by cluster and node; a cluster that
// cannot be read has none.
func allNodeAnnotations(ctx context.Context, rec *layout.Record) map[string]map[string]map[string]string {
	out := map[string]map[string]map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range rec.Clusters {
		wg.Go(func() {
			a, err := nodeAnnotations(ctx, c.DirectKubeconfig)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			out[c.Name] = a
		})
	}
	wg.Wait()
	return out
}

// readDevices reads node n's devices and peers from the metrics of its semaphore-wireguard c,
// and each device's allowed IPs by public key from the device itself.
func readDevices(ctx context.Context, n layout.Node, c layout.Controller) ([]WGDevice, error) {
	ss, err := Scrape(ctx, c.Admin, "semaphore_wg_", 2*time.Second)
	if err != nil {
		return nil, err
	}
	devices := wgDevices(n, ss)
	root, err := ContainerRoot(c.PodUID)
	for d := range devices {
		dev := &devices[d]
		if dev.AllowedErr = err; err != nil {
			continue
		}
		dev.allowed, dev.AllowedErr = DeviceAllowedIPs(root, dev.Name)
	}
	return devices, nil
}

// wgDevices are node n's devices, one per remote, from its controller's samples.
func wgDevices(n layout.Node, ss []testbed.Sample) []WGDevice {
	var out []WGDevice
	for _, r := range layout.RemotesOf(n.Cluster) {
		d := WGDevice{Name: peers.DeviceName(r), Remote: r}
		for _, s := range ss {
			switch {
			case s.Name == "semaphore_wg_peers" && s.Labels["remote"] == r && s.Labels["device"] != "":
				d.Name = s.Labels["device"]
			case s.Name == "semaphore_wg_gateway_role" && s.Labels["remote"] == r && s.Value == 1:
				d.Role = s.Labels["role"]
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

// wireguardStatus is every node's semaphore-wireguard: its devices and their peers, and the
// Calico-way cluster's IPAM, which says what its peers' allowed IPs must be.
type wireguardStatus struct {
	nodes  []NodeWireGuard
	blocks *calicoBlocks // shared with the other parts of a collection; nil reads its own
	ipam   calicoIPAM
}

func (s *wireguardStatus) collect(ctx context.Context, rec *layout.Record) {
	if rec.Nodes == nil || rec.NodesSkipped() {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.ipam = s.blocks.read(ctx, rec) })
	s.nodes = collectWireGuard(ctx, rec)
	wg.Wait()
}

// problems: every node runs semaphore-wireguard, whose device for each remote has every node
// of the remote as a peer, with the allowed IPs of wantAllowedIPs, and has shaken hands with
// each.
func (s *wireguardStatus) problems(rec *layout.Record) []string {
	if rec.Nodes == nil || rec.Nodes.Skipped != "" {
		return nil
	}
	var problems []string
	if s.ipam.err != nil {
		problems = append(problems, fmt.Sprintf("the allowed IPs of %s's nodes are not checked: %v", layout.CalicoCluster, s.ipam.err))
	}
	for _, n := range s.nodes {
		if n.Err != nil {
			problems = append(problems, fmt.Sprintf("semaphore-wireguard on %s: %v", n.Node.Name, n.Err))
			continue
		}
		for _, d := range n.Devices {
			want, why := wantPeers(n.Node, d)
			var got []string
			for _, p := range d.Peers {
				got = append(got, p.Node)
			}
			if !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s: %s has peers %v, want %v (%s)", n.Node.Name, d.Name, got, want, why))
			}
			for _, p := range d.Peers {
				if p.Handshake.IsZero() {
					problems = append(problems, fmt.Sprintf("%s: %s has not shaken hands with %s", n.Node.Name, d.Name, p.Node))
				}
				if want, known := s.wantAllowed(rec, d, p.Node); known && d.AllowedErr == nil && !slices.Equal(p.AllowedIPs, want) {
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

// wantPeers are the peers node's device d must have, and why: in the mesh every node of the
// remote; toward a remote this node's cluster reaches through gateways, those on the active
// gateway only; toward a remote that reaches this cluster through its gateways, its active
// gateway alone (docs/gateways.md).
func wantPeers(node layout.Node, d WGDevice) ([]string, string) {
	if layout.SpecOf(node.Cluster).Gateways && d.Role != "active" {
		if d.Role == "" {
			return nil, fmt.Sprintf("no gateway role reported toward %s", d.Remote)
		}
		return nil, fmt.Sprintf("the %s node toward %s", d.Role, d.Remote)
	}
	if layout.SpecOf(d.Remote).Gateways {
		if d.Gateway == "" {
			return []string{"(none)"}, fmt.Sprintf("no node of %s says it is the active gateway toward %s", d.Remote, node.Cluster)
		}
		return []string{d.Gateway}, fmt.Sprintf("%s's active gateway", d.Remote)
	}
	var want []string
	for i := range layout.NodesPerCluster {
		want = append(want, layout.NodeName(d.Remote, i))
	}
	return want, "the nodes of " + d.Remote
}

// wantAllowed are the allowed IPs of peer on device d: those of the remote's node, or through the
// remote's gateway, of every node of the remote, sorted.
func (s *wireguardStatus) wantAllowed(rec *layout.Record, d WGDevice, peer string) ([]string, bool) {
	if !layout.SpecOf(d.Remote).Gateways {
		return wantAllowedIPs(rec, s.ipam, d.Remote, peer)
	}
	var all []string
	for i := range layout.NodesPerCluster {
		ips, known := wantAllowedIPs(rec, s.ipam, d.Remote, layout.NodeName(d.Remote, i))
		if !known {
			return nil, false
		}
		all = append(all, ips...)
	}
	slices.Sort(all)
	return all, true
}

// print prints every node's devices and peers, or why the lab has no nodes.
func (s *wireguardStatus) print(w io.Writer, rec *layout.Record) {
	if rec.Nodes == nil {
		return // a lab that has not got as far as its nodes
	}
	if rec.Nodes.Skipped != "" {
		section(w, "WireGuard (semaphore-wireguard on nodes as network namespaces)")
		fmt.Fprintf(w, "  skipped: %s\n", rec.Nodes.Skipped)
		return
	}
	section(w, fmt.Sprintf("WireGuard (semaphore-wireguard on every node; the nodes are network namespaces %s<cluster>-<n> on their provider's network)", layout.NetnsPrefix))
	tw := table(w)
	fmt.Fprintf(tw, "  node\taddresses\tpods\tdevice\tpeer\tendpoint\tlast handshake\tallowed IPs\n")
	for _, n := range s.nodes {
		node := fmt.Sprintf("  %s\t%s\t%s", n.Node.Name, nodeAddresses(n.Node), podsColumn(n.Node, s.ipam))
		if n.Err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\n", node, n.Err)
			continue
		}
		for _, d := range n.Devices {
			dev := d.Name
			switch d.Role {
			case "active", "standby":
				dev += " (" + d.Role + " gateway)"
			case "member":
				dev += " (through the gateway)"
			}
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
	if s.ipam.err != nil {
		fmt.Fprintf(w, "  error: %v\n", s.ipam.err)
	}
}

// handshakeAge is how long ago t was: "12s ago", or "never" for the zero time.
func handshakeAge(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%s ago", max(time.Since(t), 0).Round(time.Second))
}

// nodeAddresses are node's InternalIP and, behind a 1:1 NAT, its ExternalIP.
func nodeAddresses(n layout.Node) string {
	if n.ExternalIP == "" {
		return n.InternalIP
	}
	return n.InternalIP + " (" + n.ExternalIP + ")"
}
