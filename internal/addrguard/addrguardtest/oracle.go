// Package addrguardtest is what the components' fuzz tests check their output against: the
// address rule written out again, independently of package addrguard, for one remote with
// Ranges and a local cluster of Local.
package addrguardtest

import "net/netip"

// Ranges and Local are the remote's ranges and the local cluster's in the fuzz tests.
var (
	Ranges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:1::/48")}
	Local  = []netip.Prefix{netip.MustParsePrefix("198.18.7.0/24"), netip.MustParsePrefix("fd00:1:0:7::/64")}
)

// forbidden are ranges no remote address may be in, besides Local: the special ranges inside
// or near Ranges and the usual suspects (loopback, link-local, metadata, multicast).
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"), netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("::/128"), netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"), netip.MustParsePrefix("fd00:ec2::254/128"),
}

// Allowed reports whether a remote with Ranges may publish the address text in a cluster of
// Local: it is an IP address (IPv4-mapped ones as the IPv4 address), inside Ranges, and in
// neither Local nor a forbidden range.
func Allowed(text string) bool {
	a, err := netip.ParseAddr(text)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	in := func(ps []netip.Prefix) bool {
		for _, p := range ps {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return in(Ranges) && !in(Local) && !in(forbidden)
}
