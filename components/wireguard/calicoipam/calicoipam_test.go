package calicoipam_test

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
)

var (
	epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addr  = netip.MustParseAddr
	pfx   = netip.MustParsePrefix
)

// block is an IPAMBlock as Calico writes it, read back the way the informer keeps it.
func block(t *testing.T, cidr, node string, holders map[string]string, age int) *calicoipam.Block {
	t.Helper()
	h := map[netip.Addr]string{}
	for a, n := range holders {
		h[addr(a)] = n
	}
	u, err := calicoipam.Object(pfx(cidr), node, h)
	if err != nil {
		t.Fatal(err)
	}
	u.SetCreationTimestamp(metav1.NewTime(epoch.Add(time.Duration(age) * time.Second)))
	out, err := calicoipam.Transform(u)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*calicoipam.Block)
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, pfx(s))
	}
	return out
}

func TestPrefixesGivesEachNodeItsAffineBlocksAndTheAddressesItBorrowed(t *testing.T) {
	blocks := []*calicoipam.Block{
		block(t, "10.1.1.0/26", "aws-1", map[string]string{"10.1.1.1": "aws-1", "10.1.1.2": "aws-2"}, 0),
		block(t, "10.1.1.64/26", "aws-1", nil, 1),
		block(t, "10.1.1.128/26", "aws-2", map[string]string{"10.1.1.130": "aws-2"}, 2),
		block(t, "fd00:1::/122", "aws-2", map[string]string{"fd00:1::5": "aws-3"}, 3),
	}
	got, skipped := calicoipam.Prefixes(blocks, nil)
	want := map[string][]netip.Prefix{
		"aws-1": prefixes("10.1.1.0/26", "10.1.1.64/26"),
		"aws-2": prefixes("10.1.1.2/32", "10.1.1.128/26", "fd00:1::/122"),
		"aws-3": prefixes("fd00:1::5/128"),
	}
	if !reflect.DeepEqual(got, want) || len(skipped) != 0 {
		t.Fatalf("Prefixes = %v, skipped %v; want %v and no skips", got, skipped, want)
	}
}

func TestPrefixesIgnoresBlocksBeingDeleted(t *testing.T) {
	marked := block(t, "10.1.1.0/26", "aws-1", nil, 0)
	marked.Deleted = true
	terminating := block(t, "10.1.1.64/26", "aws-1", nil, 0)
	now := metav1.NewTime(epoch)
	terminating.DeletionTimestamp = &now
	got, skipped := calicoipam.Prefixes([]*calicoipam.Block{marked, terminating}, nil)
	if len(got) != 0 || len(skipped) != 0 {
		t.Fatalf("Prefixes = %v, skipped %v; want nothing at all", got, skipped)
	}
}

func TestPrefixesSkipsBadBlocksWithAReasonEach(t *testing.T) {
	badCIDR := block(t, "10.1.2.0/26", "aws-1", nil, 0)
	badCIDR.CIDR = "10.1.2.0/33"
	hostBits := block(t, "10.1.3.0/26", "aws-1", nil, 0)
	hostBits.CIDR = "10.1.3.5/26"
	noAffinity := block(t, "10.1.4.0/26", "", map[string]string{"10.1.4.9": "aws-2"}, 0)
	virtual := block(t, "10.1.5.0/26", "", nil, 0)
	virtual.Affinity = "virtual:aws-1"
	local := block(t, "10.9.0.0/16", "aws-1", nil, 0)
	good := block(t, "10.1.1.0/26", "aws-1", nil, 0)

	got, skipped := calicoipam.Prefixes([]*calicoipam.Block{badCIDR, hostBits, noAffinity, virtual, local, good}, prefixes("10.9.3.0/24"))
	want := map[string][]netip.Prefix{
		"aws-1": prefixes("10.1.1.0/26"),
		// A block without affinity routes no range, but its allocations still reach their nodes.
		"aws-2": prefixes("10.1.4.9/32"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Prefixes = %v, want %v", got, want)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		if s.Detail == "" {
			t.Errorf("skip of %s has no detail", s.Block)
		}
		reasons[s.Block] = s.Reason
	}
	wantReasons := map[string]string{
		badCIDR.Name:    calicoipam.ReasonBadCIDR,
		hostBits.Name:   calicoipam.ReasonBadCIDR,
		noAffinity.Name: calicoipam.ReasonNoAffinity,
		virtual.Name:    calicoipam.ReasonNoAffinity,
		local.Name:      calicoipam.ReasonLocal,
	}
	if !reflect.DeepEqual(reasons, wantReasons) {
		t.Errorf("skipped %v, want %v", reasons, wantReasons)
	}
}

func TestOverlappingBlocksKeepTheOldestWhateverTheOrder(t *testing.T) {
	older := block(t, "10.1.1.0/26", "aws-1", nil, 0)
	newer := block(t, "10.1.1.0/25", "aws-2", nil, 5)
	newer.Name = "a-sorts-first"
	sameAge := block(t, "10.1.1.32/27", "aws-3", nil, 0) // same time as older; its name sorts later
	for _, order := range [][]*calicoipam.Block{{older, newer, sameAge}, {sameAge, newer, older}} {
		got, skipped := calicoipam.Prefixes(order, nil)
		if want := map[string][]netip.Prefix{"aws-1": prefixes("10.1.1.0/26")}; !reflect.DeepEqual(got, want) {
			t.Errorf("Prefixes = %v, want %v", got, want)
		}
		if len(skipped) != 2 || skipped[0].Reason != calicoipam.ReasonOverlapping || skipped[1].Reason != calicoipam.ReasonOverlapping {
			t.Errorf("skipped = %v, want both later blocks as overlapping", skipped)
		}
	}
}

func TestASingleAddressBlockLentToAnotherNodeIsThatNodesOnly(t *testing.T) {
	got, _ := calicoipam.Prefixes([]*calicoipam.Block{block(t, "10.1.1.7/32", "aws-1", map[string]string{"10.1.1.7": "aws-2"}, 0)}, nil)
	if want := map[string][]netip.Prefix{"aws-2": prefixes("10.1.1.7/32")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Prefixes = %v, want %v (one prefix, one node)", got, want)
	}
}

func TestFromUnstructuredToleratesMalformedAllocations(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"cidr":     "10.1.1.0/30",
		"affinity": "host:aws-1",
		// null (free), an index past the attributes, a negative one, a string, and a good one.
		"allocations": []any{nil, int64(7), int64(-1), "x", int64(0)},
		"attributes":  []any{map[string]any{"secondary": map[string]any{"node": "aws-2"}}},
	}}}
	u.SetName("10-1-1-0-30")
	b := calicoipam.FromUnstructured(u)
	if want := []calicoipam.Holder{{Ordinal: 4, Node: "aws-2"}}; !reflect.DeepEqual(b.Holders, want) {
		t.Fatalf("Holders = %v, want %v", b.Holders, want)
	}
	// Ordinal 4 is past a /30's four addresses: nothing to route for it.
	got, _ := calicoipam.Prefixes([]*calicoipam.Block{b}, nil)
	if want := map[string][]netip.Prefix{"aws-1": prefixes("10.1.1.0/30")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Prefixes = %v, want %v", got, want)
	}
}

func TestTransformKeepsBlocksAndTombstonesAsTheyAre(t *testing.T) {
	b := block(t, "10.1.1.0/26", "aws-1", nil, 0)
	if again, _ := calicoipam.Transform(b); again != b {
		t.Errorf("Transform changed a *Block")
	}
	if copied := b.DeepCopyObject().(*calicoipam.Block); !reflect.DeepEqual(copied, b) || copied == b {
		t.Errorf("DeepCopyObject is not an equal copy")
	}
}

func TestBlockNameIsCalicos(t *testing.T) {
	for cidr, want := range map[string]string{"10.244.1.0/26": "10-244-1-0-26", "fd00:1::/122": "fd00-1---122"} {
		if got := calicoipam.BlockName(pfx(cidr)); got != want {
			t.Errorf("BlockName(%s) = %q, want %q", cidr, got, want)
		}
	}
}

func FuzzPrefixesNeverGivesOnePrefixToTwoNodes(f *testing.F) {
	f.Add(uint8(26), uint8(24), uint8(3), uint16(0x0102), uint8(5))
	f.Fuzz(func(t *testing.T, bits1, bits2, off uint8, borrowed uint16, ordinal uint8) {
		a := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 1, 0}), int(bits1%9)+24).Masked()
		b := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 1, off}), int(bits2%9)+24).Masked()
		u1, _ := calicoipam.Object(a, "n1", nil)
		u2, _ := calicoipam.Object(b, "n2", nil)
		blocks := []*calicoipam.Block{calicoipam.FromUnstructured(u1), calicoipam.FromUnstructured(u2)}
		blocks[1].Holders = []calicoipam.Holder{{Ordinal: int(ordinal), Node: []string{"n1", "n3"}[borrowed%2]}}
		got, _ := calicoipam.Prefixes(blocks, nil)
		owner := map[netip.Prefix]string{}
		for node, ps := range got {
			for _, p := range ps {
				if other, dup := owner[p]; dup {
					t.Fatalf("%s given to %s and %s", p, other, node)
				}
				owner[p] = node
			}
		}
	})
}
