package addrguard

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// Ranges are, per remote, the ranges its addresses must lie in: SEMAPHORE_REMOTE_POD_RANGES.
type Ranges map[string][]netip.Prefix

// Decode parses remote:CIDR pairs, comma-separated ("aws:198.18.0.0/16,aws:fd00:1::/48"); a
// remote may be named more than once. An IPv6 CIDR's colons come after the first, which ends
// the remote's name. It implements envconfig.Decoder.
func (r *Ranges) Decode(value string) error {
	*r = Ranges{}
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		remote, cidr, ok := strings.Cut(item, ":")
		if !ok || remote == "" {
			return fmt.Errorf("%q is not remote:CIDR", item)
		}
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return fmt.Errorf("%q: %w", item, err)
		}
		if p != p.Masked() {
			return fmt.Errorf("%q: host bits set (the range is %s)", item, p.Masked())
		}
		(*r)[remote] = append((*r)[remote], p)
	}
	return nil
}

// CheckRemotes reports a remote named in the ranges that is not one of remotes, and a range
// that is itself special (no address of it could ever be accepted).
func (r Ranges) CheckRemotes(remotes []string) error {
	for _, name := range slices.Sorted(maps.Keys(r)) {
		if !slices.Contains(remotes, name) {
			return fmt.Errorf("remote %q is not in SEMAPHORE_REMOTES", name)
		}
		for _, p := range r[name] {
			for _, s := range special {
				if s.Contains(p.Addr()) && s.Bits() <= p.Bits() {
					return fmt.Errorf("%s:%s lies inside the special range %s", name, p, s)
				}
			}
		}
	}
	return nil
}

// String is the ranges as Decode reads them.
func (r Ranges) String() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r)) {
		for _, p := range r[name] {
			parts = append(parts, name+":"+p.String())
		}
	}
	return strings.Join(parts, ",")
}
