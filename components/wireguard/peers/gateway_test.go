package peers_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// gateway is node n saying it is its cluster's active gateway toward local with term.
func gateway(n peers.Node, term string) peers.Node {
	n.Annotations[peers.GatewayAnnotation(local)] = term
	return n
}

// member is a node of a gateway's cluster: pod CIDRs and no key, as a node that is no gateway
// publishes none.
func member(name string, podCIDRs ...string) peers.Node {
	return peers.Node{Name: name, Annotations: map[string]string{"unrelated": "x"}, PodCIDRs: podCIDRs}
}

func TestThroughGateway(t *testing.T) {
	mesh := []peers.Node{nodeA(), good("node-b", "192.0.2.2:51821", "198.18.2.0/24")}
	if peers.ThroughGateway(local, mesh) {
		t.Errorf("ThroughGateway(nodes of which none says it is a gateway) = true")
	}
	other := nodeA()
	other.Annotations[peers.GatewayAnnotation("aws")] = "3"
	if peers.ThroughGateway(local, []peers.Node{other}) {
		t.Errorf("ThroughGateway(a node that is the gateway toward another cluster) = true")
	}
	// A term that is not a number still says the remote is in the gateway topology: its
	// nodes are not peers of their own.
	if !peers.ThroughGateway(local, append(mesh, gateway(member("node-c"), "x"))) {
		t.Errorf("ThroughGateway(nodes of which one says it is the gateway) = false")
	}
}

func TestActiveGateway(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []peers.Node
		want      string // "" for none
		wantSkips []peers.Skip
	}{
		{name: "no gateway", nodes: []peers.Node{nodeA(), member("node-b")}},
		{name: "one", nodes: []peers.Node{nodeA(), gateway(member("node-b"), "1")}, want: "node-b"},
		{
			// The gateway elected before the last cannot always remove its annotation (its
			// node is cut off): the higher term wins, whatever the order.
			name:  "the higher term wins",
			nodes: []peers.Node{gateway(member("node-c"), "7"), gateway(member("node-b"), "12"), gateway(member("node-a"), "9")},
			want:  "node-b",
		},
		{
			name:  "terms are numbers, not text",
			nodes: []peers.Node{gateway(member("node-b"), "10"), gateway(member("node-a"), "9")},
			want:  "node-b",
		},
		{
			name:  "a tie goes to the first by name",
			nodes: []peers.Node{gateway(member("node-c"), "4"), gateway(member("node-b"), "4")},
			want:  "node-b",
		},
		{
			name:      "a term that is not a number",
			nodes:     []peers.Node{gateway(member("node-c"), "-1"), gateway(member("node-b"), "2"), gateway(member("node-a"), "two")},
			want:      "node-b",
			wantSkips: []peers.Skip{{Node: "node-a", Reason: peers.ReasonBadGatewayTerm}, {Node: "node-c", Reason: peers.ReasonBadGatewayTerm}},
		},
		{
			name:      "no term is a number",
			nodes:     []peers.Node{gateway(member("node-a"), ""), gateway(member("node-b"), "99999999999999999999999")},
			wantSkips: []peers.Skip{{Node: "node-a", Reason: peers.ReasonBadGatewayTerm}, {Node: "node-b", Reason: peers.ReasonBadGatewayTerm}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, skips := peers.ActiveGateway(local, tt.nodes)
			if found != (tt.want != "") || got.Name != tt.want {
				t.Errorf("ActiveGateway() = %q, %v; want %q", got.Name, found, tt.want)
			}
			if diff := cmp.Diff(tt.wantSkips, skips, cmpopts.IgnoreFields(peers.Skip{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ActiveGateway() skips mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredThroughGateway(t *testing.T) {
	gw := gateway(good("node-g", "192.0.2.7:51821", "198.18.7.0/24"), "3")
	tests := []struct {
		name      string
		nodes     []peers.Node
		wantPeers []peers.Peer
		wantSkips []peers.Skip
	}{
		{
			name:  "the gateway carries every node's pods, in name order",
			nodes: []peers.Node{member("node-b", "198.18.2.0/24", "fd00:18:2::/64"), gw, member("node-a", "198.18.1.0/24")},
			wantPeers: []peers.Peer{peer("node-g", "192.0.2.7:51821",
				"198.18.1.0/24", "198.18.2.0/24", "fd00:18:2::/64", "198.18.7.0/24")},
		},
		{
			// The others may still publish keys (a cluster moving from the mesh): they are no
			// peers of their own, and their endpoints need not be reachable.
			name:      "other nodes are no peers",
			nodes:     []peers.Node{nodeA(), gw},
			wantPeers: []peers.Peer{peer("node-g", "192.0.2.7:51821", "198.18.1.0/24", "198.18.7.0/24")},
		},
		{
			name:      "a gateway that publishes no endpoint is reached by its handshakes",
			nodes:     []peers.Node{gateway(node("node-g", local, keyOf("node-g"), ""), "1"), member("node-a", "198.18.1.0/24")},
			wantPeers: []peers.Peer{{Node: "node-g", PublicKey: pubKey("node-g"), AllowedIPs: cidrs("198.18.1.0/24")}},
		},
		{
			name:      "nodes without pod CIDRs add nothing",
			nodes:     []peers.Node{member("node-a"), gw},
			wantPeers: []peers.Peer{peer("node-g", "192.0.2.7:51821", "198.18.7.0/24")},
		},
		{
			// One node claiming what its cluster may not route loses its own pods' routes, not
			// every node's.
			name: "a node with bad pod CIDRs is skipped, the others carried",
			nodes: []peers.Node{
				gw, member("node-a", "198.18.1.0/24"),
				member("node-b", "bad"),
				member("node-c", "198.18.3.0/24", "8.8.8.0/24"),
				member("node-d", "198.18.1.128/25"),
				member("node-e", "198.18.1.9/32"),
				member("node-x", "198.19.252.0/24"),
				member("node_y", "198.18.9.0/24"),
			},
			wantPeers: []peers.Peer{peer("node-g", "192.0.2.7:51821", "198.18.1.0/24", "198.18.1.9/32", "198.18.7.0/24")},
			wantSkips: []peers.Skip{
				{Node: "node-b", Reason: peers.ReasonBadPodCIDR},
				{Node: "node-c", Reason: addrguard.ReasonOutsideRanges},
				{Node: "node-d", Reason: peers.ReasonOverlappingIP},
				{Node: "node-x", Reason: addrguard.ReasonLocal},
				{Node: `"node_y"`, Reason: peers.ReasonInvalidName},
			},
		},
		{
			name:      "a gateway with a bad key is no peer",
			nodes:     []peers.Node{gateway(node("node-g", local, "bad", "192.0.2.7:51821", "198.18.7.0/24"), "1"), member("node-a", "198.18.1.0/24")},
			wantSkips: []peers.Skip{{Node: "node-g", Reason: peers.ReasonBadKey}},
		},
		{
			name: "a gateway whose endpoint is not its own is no peer",
			nodes: func() []peers.Node {
				g := gateway(good("node-g", "192.0.2.7:51821", "198.18.7.0/24"), "1")
				g.Addresses = []string{"192.0.2.99"}
				return []peers.Node{g}
			}(),
			wantSkips: []peers.Skip{{Node: "node-g", Reason: peers.ReasonForeignEndpoint}},
		},
		{
			name:      "a gateway without a key is no peer",
			nodes:     []peers.Node{gateway(member("node-g", "198.18.7.0/24"), "1")},
			wantSkips: []peers.Skip{{Node: "node-g", Reason: peers.ReasonNotAnnotated}},
		},
		{
			name:      "no pod CIDR that may be routed",
			nodes:     []peers.Node{gateway(good("node-g", "192.0.2.7:51821"), "1"), member("node-a", "8.8.8.0/24")},
			wantSkips: []peers.Skip{{Node: "node-a", Reason: addrguard.ReasonOutsideRanges}, {Node: "node-g", Reason: peers.ReasonNoPodCIDR}},
		},
		{
			name:      "no active gateway",
			nodes:     []peers.Node{gateway(good("node-g", "192.0.2.7:51821", "198.18.7.0/24"), "one"), member("node-a", "198.18.1.0/24")},
			wantSkips: []peers.Skip{{Node: "node-g", Reason: peers.ReasonBadGatewayTerm}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deepCopy(tt.nodes)
			gotPeers, gotSkips := peers.DesiredThroughGateway(local, tt.nodes, peers.Rules{Guard: testGuard()})
			if diff := cmp.Diff(tt.wantPeers, gotPeers, netOpts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DesiredThroughGateway() peers mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkips, gotSkips, cmpopts.IgnoreFields(peers.Skip{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DesiredThroughGateway() skips mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.nodes); diff != "" {
				t.Errorf("DesiredThroughGateway() changed its input (-before +after):\n%s", diff)
			}
		})
	}
}
