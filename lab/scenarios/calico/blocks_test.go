package calico

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// ipamBlock is an IPAMBlock as calico-ipam writes it, read as the scenario reads it: cidr
// affine to node ("" for none), with the address of each of allocated ("198.18.1.2@aws-node-2")
// allocated to a pod on its node.
func ipamBlock(t *testing.T, cidr, node string, allocated ...string) *calicoipam.Block {
	t.Helper()
	holders := map[netip.Addr]string{}
	for _, a := range allocated {
		addr, holder, _ := strings.Cut(a, "@")
		holders[netip.MustParseAddr(addr)] = holder
	}
	u, err := calicoipam.Object(netip.MustParsePrefix(cidr), node, holders)
	if err != nil {
		t.Fatal(err)
	}
	return calicoipam.FromUnstructured(u)
}

// deleted is b marked deleted, as calico-ipam does before it removes a block.
func deleted(b *calicoipam.Block) *calicoipam.Block {
	b.Deleted = true
	return b
}

// The pools the scenario names are the Calico-way cluster's.
func TestTheScenariosPoolsAreTheCalicoClustersPools(t *testing.T) {
	for _, name := range []string{layout.PodsPool, layout.FluentdPool} {
		if !poolCIDR(name).IsValid() {
			t.Errorf("%s has no pool %s: %v", layout.CalicoCluster, name, layout.IPPoolsOf(layout.CalicoCluster))
		}
	}
	if poolCIDR(layout.PodsPool).Overlaps(poolCIDR(layout.FluentdPool)) {
		t.Errorf("pools %s (%s) and %s (%s) overlap", layout.PodsPool, poolCIDR(layout.PodsPool), layout.FluentdPool, poolCIDR(layout.FluentdPool))
	}
}

// The free addresses are those of the node's live blocks of the pool: every allocation takes
// one, a pod's of another node too; other nodes' blocks, other pools' and blocks being deleted
// have none to give.
func TestFreeAddressesCountsTheNodesBlocksOfThePool(t *testing.T) {
	pool := netip.MustParsePrefix("198.18.1.0/25")
	blocks := []*calicoipam.Block{
		ipamBlock(t, "198.18.1.0/29", "aws-node-1", "198.18.1.1@aws-node-1", "198.18.1.2@aws-node-2"),
		ipamBlock(t, "198.18.1.8/29", "aws-node-1", "198.18.1.9@aws-node-1"),
		ipamBlock(t, "198.18.1.16/29", "aws-node-2"),
		ipamBlock(t, "198.18.1.248/29", "aws-node-1"),
		deleted(ipamBlock(t, "198.18.1.24/29", "aws-node-1")),
	}
	free, own := freeAddresses(blocks, pool, "aws-node-1")
	if want := []string{"198.18.1.0/29", "198.18.1.8/29"}; free != 6+7 || !slices.Equal(own, want) {
		t.Errorf("freeAddresses = %d in %v, want 13 in %v", free, own, want)
	}
	if free, own := freeAddresses(blocks, pool, "aws-node-3"); free != 0 || own != nil {
		t.Errorf("freeAddresses of a node without blocks = %d in %v, want none", free, own)
	}
}

// A new block is a live one of the node that was not there before.
func TestNewBlocksAreTheNodesBlocksNotThereBefore(t *testing.T) {
	before := []*calicoipam.Block{
		ipamBlock(t, "198.18.1.0/29", "aws-node-1"),
		deleted(ipamBlock(t, "198.18.1.16/29", "aws-node-1")),
	}
	after := []*calicoipam.Block{
		ipamBlock(t, "198.18.1.0/29", "aws-node-1"),
		ipamBlock(t, "198.18.1.8/29", "aws-node-2"),
		ipamBlock(t, "198.18.1.16/29", "aws-node-1"),
		deleted(ipamBlock(t, "198.18.1.24/29", "aws-node-1")),
	}
	var got []string
	for _, b := range newBlocks(before, after, "aws-node-1") {
		got = append(got, b.CIDR)
	}
	if want := []string{"198.18.1.16/29"}; !slices.Equal(got, want) {
		t.Errorf("newBlocks = %v, want %v", got, want)
	}
	if got := blocksOf(after, "aws-node-1"); !slices.Equal(got, []string{"198.18.1.0/29", "198.18.1.16/29"}) {
		t.Errorf("blocksOf = %v, want aws-node-1's two live blocks", got)
	}
}

// kube-controllers releases an empty block only when its node has another; a block that holds
// an address, a node's only block and a block of no node stay.
func TestReleasableBlocksAreEmptyBlocksOfNodesWithOthers(t *testing.T) {
	blocks := []*calicoipam.Block{
		ipamBlock(t, "198.18.1.0/29", "aws-node-1", "198.18.1.1@aws-node-1"),
		ipamBlock(t, "198.18.1.8/29", "aws-node-1"),
		ipamBlock(t, "198.18.1.16/29", "aws-node-2"),
		ipamBlock(t, "198.18.1.24/29", ""),
		ipamBlock(t, "198.18.1.32/29", ""),
		ipamBlock(t, "198.18.1.248/29", "aws-node-3", "198.18.1.250@aws-node-2"),
		deleted(ipamBlock(t, "198.18.1.40/29", "aws-node-3")),
	}
	if got, want := releasable(blocks), []string{"198.18.1.8/29 (aws-node-1)"}; !slices.Equal(got, want) {
		t.Errorf("releasable = %v, want %v", got, want)
	}
}

// A borrowed address is one of the pool, in a block of the owner, held by a pod on the
// borrower.
func TestBorrowedProblem(t *testing.T) {
	pool := netip.MustParsePrefix("198.18.1.248/29")
	blocks := []*calicoipam.Block{
		ipamBlock(t, "198.18.1.248/29", "aws-node-1", "198.18.1.249@aws-node-1", "198.18.1.250@aws-node-2"),
		ipamBlock(t, "198.18.1.0/29", "aws-node-2", "198.18.1.1@aws-node-2"),
	}
	if p := borrowedProblem(blocks, hostPrefix("198.18.1.250"), "aws-node-2", "aws-node-2", "aws-node-1", pool); p != "" {
		t.Errorf("a borrowed address: %s", p)
	}
	for what, p := range map[string]string{
		"on the owner":            borrowedProblem(blocks, hostPrefix("198.18.1.250"), "aws-node-1", "aws-node-2", "aws-node-1", pool),
		"outside the pool":        borrowedProblem(blocks, hostPrefix("198.18.1.1"), "aws-node-2", "aws-node-2", "aws-node-1", pool),
		"of another node's block": borrowedProblem(blocks, hostPrefix("198.18.1.250"), "aws-node-2", "aws-node-2", "aws-node-3", pool),
		"in no block":             borrowedProblem(blocks[1:], hostPrefix("198.18.1.250"), "aws-node-2", "aws-node-2", "aws-node-1", pool),
	} {
		if p == "" {
			t.Errorf("an address %s passes as borrowed", what)
		}
	}
}

// A remote node shows a change once the prefix is both allowed and routed to the node's peer,
// and its removal once it is neither; half of it is neither.
func TestPeerChangeShownByAllowedIPsAndRoutes(t *testing.T) {
	block := netip.MustParsePrefix("198.18.1.16/29")
	added := peerChange{node: "aws-node-1", prefix: block}
	removed := peerChange{node: "aws-node-1", prefix: block, removed: true}
	device := func(allowed, routes []string) status.DevicePeers {
		return status.DevicePeers{AllowedIPs: map[string][]string{"aws-node-1": allowed}, Routes: routes}
	}
	for _, tc := range []struct {
		name             string
		d                status.DevicePeers
		added, removedOK bool
	}{
		{"both", device([]string{"198.18.1.0/29", "198.18.1.16/29"}, []string{"198.18.1.0/29", "198.18.1.16/29"}), true, false},
		{"allowed only", device([]string{"198.18.1.16/29"}, nil), false, false},
		{"routed only", device(nil, []string{"198.18.1.16/29"}), false, false},
		{"neither", device([]string{"198.18.1.0/29"}, []string{"198.18.1.0/29"}), false, true},
		{"another peer's", status.DevicePeers{AllowedIPs: map[string][]string{"aws-node-2": {"198.18.1.16/29"}}, Routes: []string{"198.18.1.16/29"}}, false, false},
	} {
		if got := added.shownBy(tc.d); got != tc.added {
			t.Errorf("%s: the addition shown %v, want %v", tc.name, got, tc.added)
		}
		if got := removed.shownBy(tc.d); got != tc.removedOK {
			t.Errorf("%s: the removal shown %v, want %v", tc.name, got, tc.removedOK)
		}
	}
}

// A device agrees with the blocks when each peer has its node's prefixes and the routes are
// all of them; a peer too many, a prefix missing or a route left over is a difference.
func TestPeerDiff(t *testing.T) {
	pfx := netip.MustParsePrefix
	want := map[string][]netip.Prefix{
		"aws-node-1": {pfx("198.18.1.0/29"), pfx("198.18.1.248/29")},
		"aws-node-2": {pfx("198.18.1.8/29"), pfx("198.18.1.250/32")},
	}
	agrees := status.DevicePeers{
		AllowedIPs: map[string][]string{"aws-node-1": {"198.18.1.0/29", "198.18.1.248/29"}, "aws-node-2": {"198.18.1.8/29", "198.18.1.250/32"}},
		Routes:     []string{"198.18.1.0/29", "198.18.1.8/29", "198.18.1.248/29", "198.18.1.250/32"},
	}
	if diff := peerDiff(want, agrees); diff != nil {
		t.Errorf("peerDiff of an agreeing device = %v, want none", diff)
	}
	differs := status.DevicePeers{
		AllowedIPs: map[string][]string{"aws-node-1": {"198.18.1.0/29", "198.18.1.248/29"}, "aws-node-2": {"198.18.1.8/29"}, "key x=": {"198.18.1.99/32"}},
		Routes:     []string{"198.18.1.0/29", "198.18.1.8/29", "198.18.1.248/29", "198.18.1.250/32", "198.18.1.99/32"},
	}
	if diff := peerDiff(want, differs); len(diff) != 3 {
		t.Errorf("peerDiff = %v, want aws-node-2's allowed IPs, the unknown peer and the routes", diff)
	}
}

// The growth of a device's changes counts the peer operations and names every operation that
// grew; a counter that appears counts from zero.
func TestChangeDelta(t *testing.T) {
	before := map[string]float64{"peer_add": 2, "peer_update": 5, "route_add": 9}
	after := map[string]float64{"peer_add": 2, "peer_update": 6, "route_add": 10, "route_remove": 1}
	ops, summary := changeDelta(before, after)
	if want := "peer_update +1, route_add +1, route_remove +1"; ops != 1 || summary != want {
		t.Errorf("changeDelta = %v, %q; want 1, %q", ops, summary, want)
	}
	if ops, summary := changeDelta(after, after); ops != 0 || summary != "none" {
		t.Errorf("changeDelta without changes = %v, %q; want 0, none", ops, summary)
	}
}

// The last node to show a change is the one that showed it latest.
func TestLatest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	node, at := latest(map[string]time.Time{"gcp-node-1": t0.Add(time.Second), "merit-node-2": t0.Add(3 * time.Second), "gcp-node-2": t0})
	if node != "merit-node-2" || !at.Equal(t0.Add(3*time.Second)) {
		t.Errorf("latest = %s at %s, want merit-node-2 at %s", node, at, t0.Add(3*time.Second))
	}
}
