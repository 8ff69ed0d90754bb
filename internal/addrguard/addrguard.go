// Package addrguard is the one rule every component applies to the addresses a remote cluster
// publishes (endpoint addresses, pod IPs, node pod ranges, IPAM blocks, WireGuard endpoints)
// before they reach a local object, a device or a route. A remote is another trust domain: what
// it publishes is input, not truth. An address is refused when it is special (loopback,
// link-local, multicast, unspecified, broadcast, a cloud's metadata service), when it lies
// outside the ranges configured for that remote, or inside the local cluster's own; a routed
// range is refused also when it is wider than the minimum prefix length.
package addrguard

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Reasons an address or range is refused: the reason label of the components' refusal metrics.
const (
	// ReasonSpecial: loopback, link-local, multicast, unspecified or broadcast, or a cloud's
	// metadata service.
	ReasonSpecial = "special_address"
	// ReasonOutsideRanges: not inside any of the ranges configured for the remote.
	ReasonOutsideRanges = "outside_remote_ranges"
	// ReasonLocal: inside one of the local cluster's own ranges.
	ReasonLocal = "local_address"
	// ReasonOtherRemote: a remote without ranges of its own publishing inside another
	// remote's ranges.
	ReasonOtherRemote = "other_remote_range"
	// ReasonTooWide: a routed range shorter than the minimum prefix length.
	ReasonTooWide = "range_too_wide"
)

// Minimum prefix lengths of a range a remote may have routed to it (a node's pod CIDR, a Calico
// IPAM block): a node's range is a /24 or a /26 block in IPv4 and a /64 or a /122 block in
// IPv6, a cluster's a /16 or a /48 at the widest; anything wider claims more than a cluster.
const (
	MinRoutedBitsIPv4 = 16
	MinRoutedBitsIPv6 = 48
)

// special are the ranges no remote may publish an address in, whatever its ranges say. IPv4-
// mapped IPv6 addresses are unmapped before they are checked.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network", the unspecified address
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, 169.254.169.254 (AWS, GCP, Azure, OpenStack metadata) included
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
	netip.MustParsePrefix("168.63.129.16/32"),   // Azure's host (wireserver)
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("::1/128"),            // loopback
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("ff00::/8"),           // multicast
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata (IPv6)
}

// Refusal says why an address or range was refused.
type Refusal struct {
	Reason string
	Detail string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Detail }

// Guard applies the rule. Its methods may be called from several goroutines, and SetLocal
// while they run.
type Guard struct {
	ranges Ranges
	local  atomic.Pointer[[]netip.Prefix] // the union of localBySource, read without a lock

	mu            sync.Mutex
	localBySource map[string][]netip.Prefix
}

// New returns a guard for the given remote ranges. A remote without ranges in them is not
// restricted to any: only the special and the local ranges are refused for it.
func New(ranges Ranges) *Guard {
	return &Guard{ranges: ranges}
}

// SetLocal replaces the local cluster's own ranges that source knows of (its nodes' pod CIDRs
// and addresses, its Service ranges, its Calico IPAM blocks), which no remote address may fall
// in. Each source (a watcher of Nodes, of ServiceCIDRs, this node's own configuration) replaces
// only its own; the guard refuses the union of all.
func (g *Guard) SetLocal(source string, local []netip.Prefix) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.localBySource == nil {
		g.localBySource = map[string][]netip.Prefix{}
	}
	g.localBySource[source] = append([]netip.Prefix(nil), local...)
	var union []netip.Prefix
	for _, name := range slices.Sorted(maps.Keys(g.localBySource)) {
		union = append(union, g.localBySource[name]...)
	}
	g.local.Store(&union)
}

// Addr returns nil when remote may publish the address, or the *Refusal saying why not.
func (g *Guard) Addr(remote string, a netip.Addr) error {
	if !a.IsValid() {
		return &Refusal{ReasonSpecial, "not a valid address"}
	}
	a = a.Unmap()
	return g.Prefix(remote, netip.PrefixFrom(a, a.BitLen()))
}

// Prefix returns nil when remote may publish the range (every address of it), or the
// *Refusal saying why not. A single address is a /32 or /128.
func (g *Guard) Prefix(remote string, p netip.Prefix) error {
	if !p.IsValid() {
		return &Refusal{ReasonSpecial, "not a valid range"}
	}
	p = unmap(p).Masked()
	if err := overlapsSpecial(p); err != nil {
		return err
	}
	if allowed, ok := g.ranges[remote]; ok && !within(p, allowed) {
		return &Refusal{ReasonOutsideRanges, fmt.Sprintf("%s is not inside %s's ranges %v", p, remote, allowed)}
	} else if !ok {
		if other, r := g.ranges.holder(p); other != "" {
			return &Refusal{ReasonOtherRemote, fmt.Sprintf("%s overlaps %s's range %s", p, other, r)}
		}
	}
	if local := g.local.Load(); local != nil {
		for _, l := range *local {
			if l.Overlaps(p) {
				return &Refusal{ReasonLocal, fmt.Sprintf("%s overlaps the local cluster's %s", p, l)}
			}
		}
	}
	return nil
}

// Routed is Prefix for a range that gets a route and WireGuard's AllowedIPs: it must also be
// no wider than the minimum prefix length of its family.
func (g *Guard) Routed(remote string, p netip.Prefix) error {
	if p.IsValid() {
		least := MinRoutedBitsIPv6
		if unmap(p).Addr().Is4() {
			least = MinRoutedBitsIPv4
		}
		if unmap(p).Bits() < least {
			return &Refusal{ReasonTooWide, fmt.Sprintf("%s is wider than /%d", p, least)}
		}
	}
	return g.Prefix(remote, p)
}

// within reports whether p lies inside one of ranges.
func within(p netip.Prefix, ranges []netip.Prefix) bool {
	for _, r := range ranges {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// unmap turns an IPv4-mapped IPv6 prefix (::ffff:a.b.c.d/120) into its IPv4 form, so that it
// meets the IPv4 rules.
func unmap(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() {
		return p
	}
	bits := p.Bits() - 96
	if bits < 0 {
		bits = 0
	}
	return netip.PrefixFrom(p.Addr().Unmap(), bits)
}

// Remote is the guard applied to one remote's addresses.
type Remote struct {
	guard *Guard
	name  string
}

// For returns the guard for the named remote. A nil Guard refuses only special addresses.
func (g *Guard) For(remote string) Remote { return Remote{guard: g, name: remote} }

// Addr is Guard.Addr for this remote.
func (r Remote) Addr(a netip.Addr) error { return r.guard.orEmpty().Addr(r.name, a) }

// Routed is Guard.Routed for this remote.
func (r Remote) Routed(p netip.Prefix) error { return r.guard.orEmpty().Routed(r.name, p) }

// rulesAlone is the guard of no ranges and no local ones: a nil Guard's.
var rulesAlone = &Guard{}

func (g *Guard) orEmpty() *Guard {
	if g == nil {
		return rulesAlone
	}
	return g
}

// Special returns a *Refusal when a is a special address (loopback, link-local, multicast,
// unspecified, broadcast, a metadata service): no remote address of any kind, a WireGuard
// endpoint included, may be one.
func Special(a netip.Addr) error {
	if !a.IsValid() {
		return &Refusal{ReasonSpecial, "not a valid address"}
	}
	a = a.Unmap()
	return overlapsSpecial(netip.PrefixFrom(a, a.BitLen()))
}

// overlapsSpecial returns a *Refusal when p overlaps a special range.
func overlapsSpecial(p netip.Prefix) error {
	for _, s := range special {
		if s.Overlaps(p) {
			return &Refusal{ReasonSpecial, fmt.Sprintf("%s overlaps %s", p, s)}
		}
	}
	return nil
}
