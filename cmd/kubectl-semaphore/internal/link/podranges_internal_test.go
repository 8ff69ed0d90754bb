package link

import (
	"fmt"
	"net/netip"
	"testing"
)

// The smallest range holding every node's, per family; the /16s or /48s that hold them where
// that would be wider than a routed range may be.
func TestCovering(t *testing.T) {
	for _, tc := range []struct {
		in    []string
		least int
		want  string
	}{
		{in: nil, least: 16, want: "[]"},
		{in: []string{"198.18.1.0/25"}, least: 16, want: "[198.18.1.0/25]"},
		{in: []string{"198.18.1.0/25", "198.18.1.128/25"}, least: 16, want: "[198.18.1.0/24]"},
		{in: []string{"10.10.1.0/24", "10.10.7.0/24", "10.10.2.0/24"}, least: 16, want: "[10.10.0.0/21]"},
		{in: []string{"10.10.1.0/24", "10.20.1.0/24", "10.10.9.0/24"}, least: 16, want: "[10.10.0.0/16 10.20.0.0/16]"},
		{in: []string{"10.0.0.0/8"}, least: 16, want: "[10.0.0.0/8]"},
		{in: []string{"10.0.0.0/8", "11.0.0.0/24"}, least: 16, want: "[10.0.0.0/8 11.0.0.0/16]"},
		{in: []string{"fd00:10:0:1::/64", "fd00:10:0:2::/64"}, least: 48, want: "[fd00:10::/62]"},
	} {
		var ps []netip.Prefix
		for _, s := range tc.in {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		if got := fmt.Sprint(covering(ps, tc.least)); got != tc.want {
			t.Errorf("covering(%v, %d) = %s, want %s", tc.in, tc.least, got, tc.want)
		}
	}
}
