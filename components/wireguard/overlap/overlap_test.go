package overlap_test

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/components/wireguard/overlap"
)

func TestFindSeesContainingContainedAndEqualPrefixes(t *testing.T) {
	x := overlap.New()
	x.Add(netip.MustParsePrefix("10.1.1.0/26"), "a")
	x.Add(netip.MustParsePrefix("10.1.2.7/32"), "b")
	x.Add(netip.MustParsePrefix("fd00::/122"), "c")
	for p, holders := range map[string]string{
		"10.1.1.0/26": "a", "10.1.1.5/32": "a", "10.1.2.0/24": "b", "10.1.2.7/32": "b",
		"fd00::/64": "c", "fd00::1/128": "c", "10.1.0.0/16": "ab", "10.1.3.0/24": "", "fd01::/64": "",
	} {
		hit, found := x.Find(netip.MustParsePrefix(p), nil)
		if found != (holders != "") || found && !strings.Contains(holders, hit.Holder) {
			t.Errorf("Find(%s) = %v, %v; want one of %q", p, hit, found, holders)
		}
	}
	singleInside := func(p, held netip.Prefix) bool {
		return p.Bits() != held.Bits() && (p.IsSingleIP() || held.IsSingleIP())
	}
	if hit, found := x.Find(netip.MustParsePrefix("10.1.1.5/32"), singleInside); found {
		t.Errorf("an allowed overlap was reported: %v", hit)
	}
	if _, found := x.Find(netip.MustParsePrefix("10.1.1.0/27"), singleInside); !found {
		t.Error("an overlap that is not allowed was missed")
	}
}

// The index agrees with comparing every pair.
func TestFindAgreesWithPairwiseComparison(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		x := overlap.New()
		var held []netip.Prefix
		for i := 0; i < 30; i++ {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(r.IntN(4)), byte(r.IntN(256))}), 22+r.IntN(11)).Masked()
			_, found := x.Find(p, nil)
			want := false
			for _, q := range held {
				want = want || p.Overlaps(q)
			}
			if found != want {
				t.Fatalf("round %d: Find(%s) found=%v, pairwise says %v (held %v)", round, p, found, want, held)
			}
			if !found {
				x.Add(p, "n")
				held = append(held, p)
			}
		}
	}
}
