package hostile

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// consumerGuard is the rule gcp's semaphore-wireguard applies on gcp-node-1: the lab's pod
// range of each remote, and the node's own pod CIDR and address as local.
func consumerGuard() *addrguard.Guard {
	g := addrguard.New(addrguard.Ranges{
		"aws":   {netip.MustParsePrefix(layout.SpecOf("aws").PodCIDR)},
		"merit": {netip.MustParsePrefix(layout.SpecOf("merit").PodCIDR)},
	})
	g.SetLocal("node", []netip.Prefix{layout.NodePodCIDR("gcp", 0), netip.MustParsePrefix("198.19.0.21/32")})
	return g
}

// asPeer is what semaphore-wireguard reads of a Node (its controller's remoteNodes).
func asPeer(n *corev1.Node) peers.Node {
	var addrs []string
	for _, a := range n.Status.Addresses {
		addrs = append(addrs, a.Address)
	}
	return peers.Node{Name: n.Name, Annotations: n.Annotations, PodCIDRs: n.Spec.PodCIDRs, Addresses: addrs}
}

func publicKey(t *testing.T) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}

// Every fake Node the hostile remote creates, annotated as semaphore-wireguard annotates a
// node, is skipped by the consumer's rule for the reason the scenario expects of it, and the
// remote's real nodes remain its only peers: the scenario tests what it means to.
func TestEveryFakeNodeIsSkippedForItsOwnReasonAndTheRealNodesStayPeers(t *testing.T) {
	remoteRange := netip.MustParsePrefix(layout.SpecOf(layout.HostileRemote).PodCIDR)
	fakes := hostileNodes(remoteRange, netip.MustParsePrefix(layout.SpecOf(layout.HostileConsumer).PodCIDR),
		layout.NodePodCIDR(layout.HostileRemote, layout.NodesPerCluster-1), "198.19.3.31", 51822)
	var nodes []peers.Node
	var want []string
	for i := range layout.NodesPerCluster {
		name := layout.NodeName(layout.HostileRemote, i)
		addr := layout.AddrAdd(netip.MustParseAddr("198.19.0.30"), i+1).String()
		honest := fakeNode{Name: name, PodCIDR: layout.NodePodCIDR(layout.HostileRemote, i).String(), Address: addr, Endpoint: addr + ":51822"}
		nodes = append(nodes, asPeer(honest.nodeObject(layout.HostileConsumer, publicKey(t))))
		want = append(want, name)
	}
	reasons := map[string]string{}
	for _, f := range fakes {
		n := f.nodeObject(layout.HostileConsumer, publicKey(t))
		if n.Labels[layout.HostileLabel] != "true" || !n.Spec.Unschedulable || n.Labels[corev1.LabelOSStable] != "" {
			t.Errorf("node %s: labels %v, unschedulable %v: the cleanup must find it and no pod may land there", n.Name, n.Labels, n.Spec.Unschedulable)
		}
		if !strings.HasPrefix(n.Name, hostileNodePrefix) || n.Name < layout.NodeName(layout.HostileRemote, layout.NodesPerCluster-1) {
			t.Errorf("node %s sorts before the real nodes: the peer limit would keep it instead of one of them", n.Name)
		}
		nodes = append(nodes, asPeer(n))
		reasons[f.Name] = f.Want
	}
	got, skipped := peers.Desired(layout.HostileConsumer, nodes, peers.Rules{Guard: consumerGuard().For(layout.HostileRemote), MaxPeers: layout.NodesPerCluster})
	var names []string
	for _, p := range got {
		names = append(names, p.Node)
	}
	if !slices.Equal(names, want) {
		t.Errorf("peers %v, want the real nodes %v", names, want)
	}
	for _, s := range skipped {
		if s.Reason != reasons[s.Node] {
			t.Errorf("%s is skipped as %s (%s), want %s", s.Node, s.Reason, s.Detail, reasons[s.Node])
		}
		delete(reasons, s.Node)
	}
	if len(reasons) > 0 {
		t.Errorf("not skipped: %v", reasons)
	}
	// Every reason the scenario can bring about with the lab's pod ranges; local_address and
	// other_remote_range need a remote without podRanges.
	wantReasons := map[string]float64{
		addrguard.ReasonTooWide: 2, addrguard.ReasonOutsideRanges: 1, addrguard.ReasonSpecial: 1,
		peers.ReasonBadEndpoint: 1, peers.ReasonForeignEndpoint: 1, peers.ReasonDuplicateEndpoint: 2,
		peers.ReasonOverlappingIP: 1, peers.ReasonPeerLimit: 1,
	}
	if got := wantSkips(fakes); !equalCounts(got, wantReasons) {
		t.Errorf("skips by reason %v, want %v", got, wantReasons)
	}
}

// The hostile Service's endpoints are refused for the reasons the scenario counts, but for
// the honest one; the metadata address too, should an API server accept it.
func TestHostileEndpointsAreRefusedForTheirReasons(t *testing.T) {
	guard := consumerGuard().For(layout.HostileRemote)
	eps := append(hostileEndpoints("198.18.2.5", "198.18.3.250"), hostileAddr{metadataAddr, addrguard.ReasonSpecial})
	for _, e := range eps {
		err := guard.Addr(netip.MustParseAddr(e.Addr))
		var r *addrguard.Refusal
		switch {
		case e.Reason == "" && err != nil:
			t.Errorf("%s is refused (%v), want it admitted", e.Addr, err)
		case e.Reason != "" && (!errors.As(err, &r) || r.Reason != e.Reason):
			t.Errorf("%s: %v, want refused as %s", e.Addr, err, e.Reason)
		}
	}
}

// Of the hostile Services, the consumer mirrors the first HostileMirrorCap by name, which hold
// the big one and the one with the hostile endpoints.
func TestTheFirstServicesByNameAreTheMirroredOnes(t *testing.T) {
	names := hostileServiceNames(layout.HostileMirrorCap, hostileOverCap)
	if len(names) != layout.HostileMirrorCap+hostileOverCap || !slices.IsSorted(names) {
		t.Fatalf("%d Services, sorted %v: %v", len(names), slices.IsSorted(names), names)
	}
	first := mirroredFirst(names, layout.HostileMirrorCap)
	if len(first) != layout.HostileMirrorCap || !slices.Contains(first, "big-annotation") || !slices.Contains(first, "endpoints") {
		t.Errorf("mirrored %v: want %d, the big one and the hostile endpoints' among them", first, layout.HostileMirrorCap)
	}
	if big := hostileService("big-annotation"); len(big.Annotations[layout.HostileLabel+"-filler"]) != hostileAnnotationBytes {
		t.Errorf("the big Service's annotation has %d bytes", len(big.Annotations[layout.HostileLabel+"-filler"]))
	}
}

// A refused address counts as a leak wherever it is: a mirror's EndpointSlice, a network set,
// a peer's allowed IPs, a route; the honest ones do not.
func TestLeaksAreFoundWhereverTheyAre(t *testing.T) {
	refused := map[string]string{"198.18.2.5": addrguard.ReasonOutsideRanges, "198.18.3.252": "host_network"}
	from := func(s *discoveryv1.EndpointSlice, l map[string]string) discoveryv1.EndpointSlice {
		maps.Copy(s.Labels, l)
		return *s
	}
	items := []discoveryv1.EndpointSlice{
		// merit's mirror and merit's share of a global service: a refused address is a leak.
		from(hostileSlice("merit-hostile-73736d-endpoints-abc", "merit-hostile-73736d-endpoints", "198.18.3.250", "198.18.2.5"),
			map[string]string{ownership.ManagedBy: ownership.ServiceMirror, mirror.LabelCluster: "merit", mirror.LabelNamespace: "hostile", mirror.LabelName: "endpoints"}),
		from(hostileSlice("gl-sys-log-73736d-echo-merit", "gl-sys-log-73736d-echo", "198.18.2.5"),
			map[string]string{ownership.ManagedBy: ownership.ServiceMirror, global.LabelCluster: "merit"}),
		// gcp's share: the address is gcp's to publish.
		from(hostileSlice("gl-sys-log-73736d-echo-gcp", "gl-sys-log-73736d-echo", "198.18.2.5"),
			map[string]string{ownership.ManagedBy: ownership.ServiceMirror, global.LabelCluster: "gcp"}),
	}
	if got := sliceLeaks("aws", "merit", items, refused); len(got) != 2 || !strings.Contains(got[0], "198.18.2.5") || !strings.Contains(got[1], "gl-sys-log-73736d-echo-merit") {
		t.Errorf("slice leaks %q, want the two of merit's slices holding 198.18.2.5", got)
	}
	sets := []status.NetSet{
		{Name: "merit-hostile-hostile", Source: netset.Source{Cluster: "merit", Namespace: "hostile", Name: "hostile"}, Nets: []string{"198.18.3.249/32", "198.18.3.252/32", "198.18.2.5/32"}},
		{Name: "gcp-sys-log-forwarder", Source: netset.Source{Cluster: "gcp", Namespace: "sys-log", Name: "forwarder"}, Nets: []string{"198.18.2.5/32"}},
	}
	if got := netSetLeaks("aws", "merit", sets, refused); len(got) != 2 || !strings.Contains(got[0], "merit-hostile-hostile") {
		t.Errorf("set leaks %q, want the two refused addresses of merit's set, not gcp's own pod in gcp's", got)
	}

	claims := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/1"), netip.MustParsePrefix("198.18.2.0/24"), netip.MustParsePrefix("198.18.3.245/32")}
	allowed := map[string][]string{"real": {"198.18.3.0/25"}, "fake": {"198.18.3.245/32"}, "stolen": {"198.18.2.0/24"}}
	if got := deviceLeaks("gcp-node-1", "wg-merit", allowed, map[string]string{"fake": "z-hostile-over-limit"}, claims); len(got) != 2 {
		t.Errorf("device leaks %q, want the fake peer and the claimed range", got)
	}

	routes := `default via 198.19.0.1 dev semlab-ul
0.0.0.0/1 dev wg-aws scope link
198.18.3.0/25 dev wg-merit scope link
198.18.3.245 dev wg-merit scope link
10.0.0.0/8 dev wg-merit scope link
local 198.18.2.1 dev cni0 table local proto kernel scope host src 198.18.2.1
broadcast 198.18.2.127 dev cni0 table local proto kernel scope link src 198.18.2.1
fe80::/64 dev wg-merit proto kernel metric 256 pref medium
local fe80::863c:28aa:baf7:5876 dev wg-merit table local proto kernel metric 0 pref medium
multicast ff00::/8 dev wg-merit table local proto kernel metric 256 pref medium
`
	got := routeLeaks("gcp-node-1", routes, "wg-merit", netip.MustParsePrefix("198.18.3.0/24"), claims)
	if len(got) != 3 || !strings.Contains(got[0], "0.0.0.0/1") || !strings.Contains(got[1], "198.18.3.245") || !strings.Contains(got[2], "10.0.0.0/8") {
		t.Errorf("route leaks %q, want 0.0.0.0/1 (any device), the claimed /32 and 10.0.0.0/8 through wg-merit", got)
	}
}
