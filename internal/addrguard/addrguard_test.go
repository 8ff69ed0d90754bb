package addrguard_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

func mustRanges(t *testing.T, value string) addrguard.Ranges {
	t.Helper()
	var r addrguard.Ranges
	if err := r.Decode(value); err != nil {
		t.Fatalf("Decode(%q): %v", value, err)
	}
	return r
}

// reason is the refusal's reason, or "" when err is nil.
func reason(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var r *addrguard.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("%v is not a *Refusal", err)
	}
	return r.Reason
}

// Addresses and ranges of a remote with ranges, and of one without, against the special
// ranges, the remote's ranges, the local cluster's and the minimum prefix length.
func TestGuard(t *testing.T) {
	g := addrguard.New(mustRanges(t, "aws:198.18.0.0/16,aws:fd00:1::/48"))
	g.SetLocal("test", []netip.Prefix{netip.MustParsePrefix("198.18.7.0/24"), netip.MustParsePrefix("10.96.0.0/12")})
	for _, tc := range []struct {
		remote, in string
		routed     bool
		want       string
	}{
		{remote: "aws", in: "198.18.1.7", want: ""},
		{remote: "aws", in: "198.18.1.0/24", routed: true, want: ""},
		{remote: "aws", in: "fd00:1:0:5::/64", routed: true, want: ""},
		{remote: "aws", in: "::ffff:198.18.1.7", want: ""},
		{remote: "aws", in: "198.19.0.1", want: addrguard.ReasonOutsideRanges},
		{remote: "aws", in: "198.18.0.0/15", want: addrguard.ReasonOutsideRanges},
		{remote: "aws", in: "198.18.7.9", want: addrguard.ReasonLocal},
		{remote: "aws", in: "198.18.6.0/23", routed: true, want: addrguard.ReasonLocal},
		{remote: "aws", in: "0.0.0.0/1", routed: true, want: addrguard.ReasonTooWide},
		{remote: "aws", in: "0.0.0.0/1", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "128.0.0.0/1", routed: true, want: addrguard.ReasonTooWide},
		{remote: "gcp", in: "128.0.0.0/1", want: addrguard.ReasonSpecial}, // overlaps multicast and broadcast
		{remote: "gcp", in: "203.0.113.0/24", routed: true, want: ""},
		{remote: "gcp", in: "10.100.0.3", want: addrguard.ReasonLocal},
		{remote: "gcp", in: "127.0.0.1", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "::ffff:127.0.0.1", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "169.254.169.254", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "fd00:ec2::254", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "100.100.100.200", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "168.63.129.16", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "fe80::1", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "ff02::1", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "224.0.0.251", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "0.0.0.0", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "::", want: addrguard.ReasonSpecial},
		{remote: "gcp", in: "fd00:2::/32", routed: true, want: addrguard.ReasonTooWide},
		{remote: "gcp", in: "198.18.1.7", want: addrguard.ReasonOtherRemote}, // aws's, and gcp has no ranges of its own
		{remote: "gcp", in: "198.18.1.0/24", routed: true, want: addrguard.ReasonOtherRemote},
		{remote: "gcp", in: "fd00:1:0:5::/64", routed: true, want: addrguard.ReasonOtherRemote},
	} {
		var err error
		switch p, perr := netip.ParsePrefix(tc.in); {
		case perr == nil && tc.routed:
			err = g.Routed(tc.remote, p)
		case perr == nil:
			err = g.Prefix(tc.remote, p)
		default:
			err = g.Addr(tc.remote, netip.MustParseAddr(tc.in))
		}
		if got := reason(t, err); got != tc.want {
			t.Errorf("%s %s (routed %v): refused for %q (%v), want %q", tc.remote, tc.in, tc.routed, got, err, tc.want)
		}
	}
	if reason(t, g.Addr("aws", netip.Addr{})) != addrguard.ReasonSpecial {
		t.Error("the zero address was accepted")
	}
}

// The variable's pairs: a remote named twice keeps both ranges, IPv6 ranges keep their colons,
// and every malformed item is refused with the item in the error.
func TestRangesDecode(t *testing.T) {
	r := mustRanges(t, " aws:198.18.0.0/16, aws:fd00:1::/48 ,gcp:198.19.0.0/16,")
	want := addrguard.Ranges{
		"aws": {netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:1::/48")},
		"gcp": {netip.MustParsePrefix("198.19.0.0/16")},
	}
	if diff := cmp.Diff(want, r, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	if got := r.String(); got != "aws:198.18.0.0/16,aws:fd00:1::/48,gcp:198.19.0.0/16" {
		t.Errorf("String() = %q", got)
	}
	if err := r.CheckRemotes([]string{"aws", "gcp"}); err != nil {
		t.Errorf("CheckRemotes: %v", err)
	}
	if err := r.CheckRemotes([]string{"aws"}); err == nil {
		t.Error("CheckRemotes accepted gcp, which is not a remote")
	}
	if err := mustRanges(t, "aws:127.0.0.0/16").CheckRemotes([]string{"aws"}); err == nil {
		t.Error("CheckRemotes accepted a range inside loopback")
	}
	for _, bad := range []string{"198.18.0.0/16", ":198.18.0.0/16", "aws:", "aws:198.18.0.0", "aws:198.18.0.1/16", "aws:nonsense/8"} {
		var r addrguard.Ranges
		if err := r.Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted it", bad)
		}
	}
}

// The central property, on arbitrary input: nothing the guard accepts from a remote lies
// outside that remote's ranges, overlaps the local cluster's ranges or a special range, or (when
// routed) is wider than the minimum prefix length.
func FuzzGuardAcceptsOnlyTheRemotesOwnAddresses(f *testing.F) {
	f.Add([]byte{198, 18, 1, 0}, uint8(24), true)
	f.Add([]byte{0, 0, 0, 0}, uint8(1), true)
	f.Add([]byte{198, 18, 7, 9}, uint8(32), false)
	f.Add([]byte{0xfd, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1}, uint8(64), true)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, uint8(128), false)
	ranges := addrguard.Ranges{"aws": {netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:1::/48")}}
	local := []netip.Prefix{netip.MustParsePrefix("198.18.7.0/24"), netip.MustParsePrefix("fd00:1:0:7::/64")}
	g := addrguard.New(ranges)
	g.SetLocal("test", local)
	specials := []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("224.0.0.0/4"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("fd00:ec2::254/128"), netip.MustParsePrefix("100.100.100.200/32"),
	}
	f.Fuzz(func(t *testing.T, raw []byte, bits uint8, routed bool) {
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		p := netip.PrefixFrom(a, int(bits))
		if !p.IsValid() {
			return
		}
		var err error
		if routed {
			err = g.Routed("aws", p)
		} else {
			err = g.Prefix("aws", p)
		}
		if err != nil {
			return
		}
		q := p.Masked()
		if q.Addr().Is4In6() {
			q = netip.PrefixFrom(q.Addr().Unmap(), q.Bits()-96)
		}
		inside := false
		for _, r := range ranges["aws"] {
			inside = inside || (r.Bits() <= q.Bits() && r.Contains(q.Addr()))
		}
		if !inside {
			t.Fatalf("accepted %s, outside the remote's ranges", p)
		}
		for _, l := range append(append([]netip.Prefix{}, local...), specials...) {
			if l.Overlaps(q) {
				t.Fatalf("accepted %s, which overlaps %s", p, l)
			}
		}
		if routed && ((q.Addr().Is4() && q.Bits() < addrguard.MinRoutedBitsIPv4) || (q.Addr().Is6() && q.Bits() < addrguard.MinRoutedBitsIPv6)) {
			t.Fatalf("routed %s, wider than the minimum prefix length", p)
		}
	})
}

// Each source of local ranges replaces only its own: the Nodes' ranges going does not forget
// the Service ranges.
func TestLocalRangesOfEachSourceAreKeptApart(t *testing.T) {
	g := addrguard.New(nil)
	g.SetLocal("nodes", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")})
	g.SetLocal("services", []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")})
	for _, a := range []string{"10.0.0.5", "10.96.0.10"} {
		if got := reason(t, g.Addr("aws", netip.MustParseAddr(a))); got != addrguard.ReasonLocal {
			t.Errorf("Addr(%s) with both sources: %q, want %q", a, got, addrguard.ReasonLocal)
		}
	}
	g.SetLocal("nodes", nil)
	if got := reason(t, g.Addr("aws", netip.MustParseAddr("10.0.0.5"))); got != "" {
		t.Errorf("Addr(10.0.0.5) after the nodes' ranges went: %q, want accepted", got)
	}
	if got := reason(t, g.Addr("aws", netip.MustParseAddr("10.96.0.10"))); got != addrguard.ReasonLocal {
		t.Errorf("Addr(10.96.0.10) after the nodes' ranges went: %q, want %q", got, addrguard.ReasonLocal)
	}
}

// Two remotes' ranges may not overlap: an address in both could be claimed by either.
func TestRangesOfTwoRemotesMustNotOverlap(t *testing.T) {
	for value, wantErr := range map[string]bool{
		"aws:198.18.0.0/16,gcp:198.19.0.0/16":                    false,
		"aws:198.18.0.0/16,aws:198.18.1.0/24":                    false, // one remote's ranges may overlap
		"aws:198.18.0.0/16,gcp:198.18.7.0/24":                    true,
		"aws:fd00:1::/48,gcp:fd00::/16":                          true,
		"aws:198.18.0.0/16,gcp:198.19.0.0/16,onprem:198.0.0.0/8": true,
	} {
		if err := mustRanges(t, value).CheckApart(); (err != nil) != wantErr {
			t.Errorf("CheckApart(%s) = %v, want an error: %v", value, err, wantErr)
		}
	}
}
