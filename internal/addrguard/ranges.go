package addrguard

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/remotepairs"
)

// Ranges are, per remote, the ranges its addresses must lie in: SEMAPHORE_REMOTE_POD_RANGES.
type Ranges map[string][]netip.Prefix

// Decode parses remote:CIDR pairs, comma-separated ("aws:198.18.0.0/16,aws:fd00:1::/48"); a
// remote may be named more than once. An IPv6 CIDR's colons come after the first, which ends
// the remote's name. It implements envconfig.Decoder.
func (r *Ranges) Decode(value string) error {
	*r = Ranges{}
	for _, item := range remotepairs.Split(value) {
		if item.Remote == "" {
			return fmt.Errorf("%q is not remote:CIDR", item.Text)
		}
		p, err := netip.ParsePrefix(item.Value)
		if err != nil {
			return fmt.Errorf("%q: %w", item.Text, err)
		}
		if p != p.Masked() {
			return fmt.Errorf("%q: host bits set (the range is %s)", item.Text, p.Masked())
		}
		(*r)[item.Remote] = append((*r)[item.Remote], p)
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

// CheckApart refuses ranges of two remotes that overlap: an address in both would belong to
// either, and each could capture the other's traffic. Ranges of one remote may overlap.
func (r Ranges) CheckApart() error {
	names := slices.Sorted(maps.Keys(r))
	for i, a := range names {
		for _, b := range names[i+1:] {
			for _, pa := range r[a] {
				for _, pb := range r[b] {
					if pa.Overlaps(pb) {
						return fmt.Errorf("%s:%s and %s:%s overlap; each remote's ranges must be its own", a, pa, b, pb)
					}
				}
			}
		}
	}
	return nil
}

// holder is the first remote (in name order) one of whose ranges overlaps p, and that range;
// "" when none does. Configured ranges of different remotes never overlap (CheckApart), so
// the order decides nothing in a valid configuration.
func (r Ranges) holder(p netip.Prefix) (string, netip.Prefix) {
	for _, name := range slices.Sorted(maps.Keys(r)) {
		for _, q := range r[name] {
			if q.Overlaps(p) {
				return name, q
			}
		}
	}
	return "", netip.Prefix{}
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
