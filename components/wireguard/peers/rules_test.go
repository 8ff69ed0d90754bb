package peers_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// What a remote's nodes may publish besides pod CIDRs: their endpoints, their names, and how
// many of them become peers.

// natRanges are endpoint ranges of a remote whose nodes sit behind a NAT.
var natRanges = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8:1::/48")}

// withAddresses is n with these published addresses (InternalIP, ExternalIP) instead of its own.
func withAddresses(n peers.Node, addresses ...string) peers.Node {
	n.Addresses = addresses
	return n
}

// A node's endpoint must be one of its own addresses, or lie in the remote's endpoint ranges
// (nodes behind a NAT): otherwise a remote could point the device at any host it likes. The node
// next to it keeps its peer either way.
func TestDesiredTakesOnlyEndpointsThatAreTheNodesOwn(t *testing.T) {
	tests := []struct {
		name   string
		node   peers.Node
		ranges []netip.Prefix
		reason string // "": a peer
	}{
		{"its InternalIP", withAddresses(good("node-b", "192.0.2.2:51821", "198.18.2.0/24"), "192.0.2.2"), nil, ""},
		{"one of several addresses", withAddresses(good("node-b", "[fd00::2]:51821", "198.18.2.0/24"), "192.0.2.2", "fd00::2"), nil, ""},
		{"its address in IPv4-mapped form", withAddresses(good("node-b", "192.0.2.2:51821", "198.18.2.0/24"), "::ffff:192.0.2.2"), nil, ""},
		{"an IPv4-mapped endpoint of its address", withAddresses(good("node-b", "[::ffff:192.0.2.2]:51821", "198.18.2.0/24"), "192.0.2.2"), nil, ""},
		{"another host", withAddresses(good("node-b", "192.0.2.99:51821", "198.18.2.0/24"), "192.0.2.2"), nil, peers.ReasonForeignEndpoint},
		{"the other node's address", withAddresses(good("node-b", "192.0.2.1:51822", "198.18.2.0/24"), "192.0.2.2"), nil, peers.ReasonForeignEndpoint},
		{"no address at all", withAddresses(good("node-b", "192.0.2.2:51821", "198.18.2.0/24")), nil, peers.ReasonForeignEndpoint},
		{"addresses that are not addresses", withAddresses(good("node-b", "192.0.2.2:51821", "198.18.2.0/24"), "node-b.example.com", "", "192.0.2.2/32"), nil, peers.ReasonForeignEndpoint},
		{"in the remote's endpoint ranges", withAddresses(good("node-b", "203.0.113.7:51821", "198.18.2.0/24"), "10.0.0.2"), natRanges, ""},
		{"in the remote's IPv6 endpoint ranges", withAddresses(good("node-b", "[2001:db8:1::7]:51821", "198.18.2.0/24"), "10.0.0.2"), natRanges, ""},
		{"its own address, with endpoint ranges set", withAddresses(good("node-b", "192.0.2.2:51821", "198.18.2.0/24"), "192.0.2.2"), natRanges, ""},
		{"outside the remote's endpoint ranges", withAddresses(good("node-b", "198.51.100.7:51821", "198.18.2.0/24"), "10.0.0.2"), natRanges, peers.ReasonForeignEndpoint},
		{"a special address is never one", withAddresses(good("node-b", "169.254.169.254:51821", "198.18.2.0/24"), "169.254.169.254"), []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, peers.ReasonBadEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := peers.Rules{Guard: testGuard(), EndpointRanges: tt.ranges}
			nodes := []peers.Node{nodeA(), tt.node}
			if tt.reason != "" {
				checkDesiredWith(t, rules, nodes, []peers.Peer{peerA}, []peers.Skip{{Node: "node-b", Reason: tt.reason}})
				return
			}
			endpoint := tt.node.Annotations[peers.EndpointAnnotation(local)]
			if ap := netip.MustParseAddrPort(endpoint); ap.Addr().Is4In6() {
				endpoint = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
			}
			checkDesiredWith(t, rules, nodes, []peers.Peer{peerA, peer("node-b", endpoint, "198.18.2.0/24")}, nil)
		})
	}
}

// The detail of a foreign endpoint names the endpoint and the node's addresses, for the log.
func TestDesiredSaysWhichEndpointIsNotTheNodes(t *testing.T) {
	_, skips := desiredPeers(local, []peers.Node{withAddresses(good("node-b", "192.0.2.99:51821", "198.18.2.0/24"), "192.0.2.2")})
	if len(skips) != 1 || !strings.Contains(skips[0].Detail, "192.0.2.99") || !strings.Contains(skips[0].Detail, "192.0.2.2") {
		t.Errorf("skips %+v: want one whose detail names 192.0.2.99 and 192.0.2.2", skips)
	}
}

// When nodes of a remote publish the same endpoint, none of them is a peer: nothing tells which
// one is honest. A node refused on its own (a foreign endpoint, a pod CIDR it may not have)
// claims nothing another must yield to.
func TestDesiredSkipsEveryNodeThatSharesAnEndpoint(t *testing.T) {
	b := good("node-b", "192.0.2.2:51821", "198.18.2.0/24")
	peerB := peer("node-b", "192.0.2.2:51821", "198.18.2.0/24")
	tests := []struct {
		name      string
		nodes     []peers.Node
		ranges    []netip.Prefix
		wantPeers []peers.Peer
		wantSkips []peers.Skip
	}{
		{
			name:      "two nodes with the same address and port",
			nodes:     []peers.Node{b, good("node-c", "192.0.2.2:51821", "198.18.3.0/24"), nodeA()},
			wantPeers: []peers.Peer{peerA},
			wantSkips: skipped(peers.ReasonDuplicateEndpoint, "node-b", "node-c"),
		},
		{
			name: "three nodes behind one NAT address and port",
			nodes: []peers.Node{
				withAddresses(good("node-b", "203.0.113.7:51821", "198.18.2.0/24"), "10.0.0.2"),
				withAddresses(good("node-c", "203.0.113.7:51821", "198.18.3.0/24"), "10.0.0.3"),
				withAddresses(good("node-d", "203.0.113.7:51821", "198.18.4.0/24"), "10.0.0.4"),
				nodeA(),
			},
			ranges:    natRanges,
			wantPeers: []peers.Peer{peerA},
			wantSkips: skipped(peers.ReasonDuplicateEndpoint, "node-b", "node-c", "node-d"),
		},
		{
			name:      "the same endpoint, once IPv4-mapped",
			nodes:     []peers.Node{b, withAddresses(good("node-c", "[::ffff:192.0.2.2]:51821", "198.18.3.0/24"), "192.0.2.2"), nodeA()},
			wantPeers: []peers.Peer{peerA},
			wantSkips: skipped(peers.ReasonDuplicateEndpoint, "node-b", "node-c"),
		},
		{
			name: "one address, different ports",
			nodes: []peers.Node{
				withAddresses(good("node-b", "203.0.113.7:51821", "198.18.2.0/24"), "10.0.0.2"),
				withAddresses(good("node-c", "203.0.113.7:51822", "198.18.3.0/24"), "10.0.0.3"),
			},
			ranges:    natRanges,
			wantPeers: []peers.Peer{peer("node-b", "203.0.113.7:51821", "198.18.2.0/24"), peer("node-c", "203.0.113.7:51822", "198.18.3.0/24")},
		},
		{
			name: "a node refused on its own does not take the honest one with it",
			nodes: []peers.Node{
				b,
				withAddresses(good("node-c", "192.0.2.2:51821", "198.18.3.0/24"), "192.0.2.3"), // not its address
				withAddresses(good("node-d", "192.0.2.2:51821", "100.64.4.0/24"), "192.0.2.2"), // not its pods
				node("node-e", local, "bad-key", "192.0.2.2:51821", "198.18.5.0/24"),
			},
			wantPeers: []peers.Peer{peerB},
			wantSkips: []peers.Skip{
				{Node: "node-c", Reason: peers.ReasonForeignEndpoint},
				{Node: "node-d", Reason: addrguard.ReasonOutsideRanges},
				{Node: "node-e", Reason: peers.ReasonBadKey},
			},
		},
		{
			// Neither keeps the key or the pod CIDR it shares with a third node.
			name: "duplicates hold no key and no pod CIDR",
			nodes: []peers.Node{
				node("node-b", local, keyOf("node-d"), "192.0.2.2:51821", "198.18.2.0/24"),
				good("node-c", "192.0.2.2:51821", "198.18.4.0/24"),
				good("node-d", "192.0.2.4:51821", "198.18.4.0/24"),
			},
			wantPeers: []peers.Peer{peer("node-d", "192.0.2.4:51821", "198.18.4.0/24")},
			wantSkips: skipped(peers.ReasonDuplicateEndpoint, "node-b", "node-c"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDesiredWith(t, peers.Rules{Guard: testGuard(), EndpointRanges: tt.ranges}, tt.nodes, tt.wantPeers, tt.wantSkips)
		})
	}
}

// A remote gets at most MaxPeers peers: the first nodes by name that could be peers, whatever
// the order it lists them in; the rest are skipped as peer_limit. Nodes skipped for another
// reason do not count.
func TestDesiredKeepsTheFirstPeersByNameUpToTheLimit(t *testing.T) {
	var nodes []peers.Node
	var all []peers.Peer
	for _, i := range []string{"1", "2", "3", "4", "5"} {
		nodes = append(nodes, good("node-"+i, "192.0.2."+i+":51821", "198.18."+i+".0/24"))
		all = append(all, peer("node-"+i, "192.0.2."+i+":51821", "198.18."+i+".0/24"))
	}
	limited := func(names ...string) []peers.Skip { return skipped(peers.ReasonPeerLimit, names...) }
	tests := []struct {
		name      string
		nodes     []peers.Node
		max       int
		wantPeers []peers.Peer
		wantSkips []peers.Skip
	}{
		{"over the limit", nodes, 3, all[:3], limited("node-4", "node-5")},
		{"a limit of one", nodes, 1, all[:1], limited("node-2", "node-3", "node-4", "node-5")},
		{"at the limit", nodes, 5, all, nil},
		{"no limit", nodes, 0, all, nil},
		{
			"skipped nodes do not count",
			append([]peers.Node{
				node("node-0", local, "bad-key", "192.0.2.100:51821", "198.18.100.0/24"),
				good("node-00", "192.0.2.101:51821", "198.18.1.0/24"), // node-1's pod CIDR, and first
			}, nodes...),
			2,
			[]peers.Peer{peer("node-00", "192.0.2.101:51821", "198.18.1.0/24"), all[1]},
			append([]peers.Skip{{Node: "node-0", Reason: peers.ReasonBadKey}, {Node: "node-1", Reason: peers.ReasonOverlappingIP}}, limited("node-3", "node-4", "node-5")...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			for range 10 {
				shuffled := deepCopy(tt.nodes)
				rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				checkDesiredWith(t, peers.Rules{Guard: testGuard(), MaxPeers: tt.max}, shuffled, tt.wantPeers, tt.wantSkips)
			}
		})
	}
}

// A name no conforming API server accepts (a hostile one sends anything) would become the
// peer's metric label: such a node is skipped whole as invalid_name, and the skip carries a
// short quoted form of the name that is safe to log.
func TestDesiredSkipsNodesWhoseNameIsNotADNSSubdomain(t *testing.T) {
	names := []string{
		"", "Node-B", "node_b", "node b", "-node", "node.", "node..b", "node\nb", "node-\u00e9",
		strings.Repeat("a", validation.DNS1123SubdomainMaxLength+1),
		"\xff\xfenode", "node-\xc3", strings.Repeat("\xff", 10000),
	}
	nodes := []peers.Node{nodeA()}
	for i, name := range names {
		// Otherwise a good node: its own endpoint and pod CIDR.
		nodes = append(nodes, good(name, fmt.Sprintf("192.0.2.%d:51821", 10+i), fmt.Sprintf("198.18.%d.0/24", 10+i)))
	}
	got, skips := desiredPeers(local, nodes)
	if len(got) != 1 || got[0].Node != "node-a" {
		t.Errorf("peers %+v, want node-a alone", got)
	}
	if len(skips) != len(names) {
		t.Fatalf("skipped %d nodes, want the %d with bad names: %+v", len(skips), len(names), skips)
	}
	for _, s := range skips {
		if s.Reason != peers.ReasonInvalidName {
			t.Errorf("skip %+v: want reason %s", s, peers.ReasonInvalidName)
		}
		if !utf8.ValidString(s.Node) || strings.ContainsAny(s.Node, "\n\r") || len(s.Node) > 300 {
			t.Errorf("skip of %q: not a short, valid UTF-8 line to log", s.Node)
		}
	}
	if !slices.ContainsFunc(skips, func(s peers.Skip) bool { return s.Node == `"Node-B"` }) {
		t.Errorf("skips %+v: want Node-B named as %q", skips, `"Node-B"`)
	}
}
