// Package overlap finds which of many IP prefixes a new one overlaps, in time proportional to
// the number of distinct prefix lengths held rather than the number of prefixes: two prefixes
// overlap exactly when one contains the other, so only the new prefix's ancestors and
// descendants at those lengths need looking at. A remote with thousands of IPAM blocks has one
// or two lengths.
package overlap

import "net/netip"

// Index holds prefixes, each with the name of its holder.
type Index struct {
	held    map[netip.Prefix]string
	lengths map[length]bool
	// inside maps a prefix at one of lengths to the held prefixes strictly inside it.
	inside map[netip.Prefix][]netip.Prefix
}

type length struct {
	bits int
	is4  bool
}

// New returns an empty index.
func New() *Index {
	return &Index{held: map[netip.Prefix]string{}, lengths: map[length]bool{}, inside: map[netip.Prefix][]netip.Prefix{}}
}

// Hit is a held prefix that overlaps the one looked up.
type Hit struct {
	Prefix netip.Prefix
	Holder string
}

// Find returns a held prefix that overlaps p (contains it, is inside it, or equals it) and that
// allowed does not accept, if any. allowed may be nil.
func (x *Index) Find(p netip.Prefix, allowed func(p, held netip.Prefix) bool) (Hit, bool) {
	p = p.Masked()
	x.track(length{p.Bits(), p.Addr().Is4()})
	ok := func(q netip.Prefix) bool { return allowed != nil && allowed(p, q) }
	for l := range x.lengths {
		if l.is4 != p.Addr().Is4() {
			continue
		}
		if l.bits <= p.Bits() {
			a := netip.PrefixFrom(p.Addr(), l.bits).Masked()
			if holder, held := x.held[a]; held && !ok(a) {
				return Hit{a, holder}, true
			}
		}
	}
	for _, q := range x.inside[p] {
		if !ok(q) {
			return Hit{q, x.held[q]}, true
		}
	}
	return Hit{}, false
}

// Add holds p for holder. A prefix already held keeps its first holder.
func (x *Index) Add(p netip.Prefix, holder string) {
	p = p.Masked()
	if _, dup := x.held[p]; dup {
		return
	}
	l := length{p.Bits(), p.Addr().Is4()}
	x.track(l)
	x.held[p] = holder
	for m := range x.lengths {
		if m.is4 == l.is4 && m.bits < p.Bits() {
			a := netip.PrefixFrom(p.Addr(), m.bits).Masked()
			x.inside[a] = append(x.inside[a], p)
		}
	}
}

// track makes l one of the lengths at which held prefixes are noted under their ancestors, so
// that prefixes of that length find what is inside them.
func (x *Index) track(l length) {
	if x.lengths[l] {
		return
	}
	x.lengths[l] = true
	for q := range x.held {
		if q.Addr().Is4() == l.is4 && q.Bits() > l.bits {
			a := netip.PrefixFrom(q.Addr(), l.bits).Masked()
			x.inside[a] = append(x.inside[a], q)
		}
	}
}
