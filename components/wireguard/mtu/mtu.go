// Package mtu works out the MTU of each remote's WireGuard device (SEMAPHORE_WG_MTU): a fixed
// number, or auto, the underlay path MTU less WireGuard's overhead. The path MTU is the smaller of
// this node's own (the MTU of its route toward the remote's peers) and the smallest the remote's
// peers publish of theirs, so that neither side sends what the other's path cannot carry.
package mtu

import (
	"fmt"
	"strconv"

	"github.com/kube-semaphore/semaphore/components/wireguard/perremote"
)

// WireGuard's overhead on each packet: the outer IP header, UDP (8 bytes) and WireGuard's own
// header and authentication tag (32 bytes).
const (
	OverheadIPv4 = 20 + 8 + 32
	OverheadIPv6 = 40 + 8 + 32
)

const (
	// Minimum is the smallest MTU of a device and the smallest path MTU a remote node may
	// publish: IPv6's minimum link MTU, which every path must carry.
	Minimum = 1280
	// Maximum is the largest fixed MTU of a device (jumbo frames).
	Maximum = 9000
	// maxPublished is the largest path MTU a remote node may publish (an IP packet's limit).
	maxPublished = 65535
	// Unknown is the device MTU when no path MTU is known at all: 1500 bytes of Ethernet less
	// the IPv6 overhead, what fits any Ethernet underlay.
	Unknown = 1500 - OverheadIPv6
)

// Setting is the MTU of one remote's device: Fixed bytes, or auto when Fixed is 0.
type Setting struct {
	Fixed int
}

// Auto reports whether the MTU follows the path.
func (s Setting) Auto() bool { return s.Fixed == 0 }

// Settings is SEMAPHORE_WG_MTU: "auto" or a number for every remote, or "remote:value" items,
// with a bare value for the remotes not named ("aws:1380,auto"). Remotes without a value are
// auto.
type Settings struct {
	perremote.Values[Setting]
}

// Decode parses the variable's value (envconfig.Decoder).
func (s *Settings) Decode(value string) error {
	v, err := perremote.Parse(value, "MTU", parseSetting)
	if err != nil {
		return err
	}
	s.Values = v
	return nil
}

// For is the setting of remote.
func (s Settings) For(remote string) Setting { return s.Values.For(remote, Setting{}) }

// Fixed is the setting of one fixed MTU for every remote.
func Fixed(bytes int) Settings {
	return Settings{perremote.Values[Setting]{Rest: Setting{Fixed: bytes}, HasRest: true}}
}

func parseSetting(s string) (Setting, error) {
	if s == "auto" {
		return Setting{}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return Setting{}, fmt.Errorf("%q is neither auto nor a number", s)
	}
	if n < Minimum || n > Maximum {
		return Setting{}, fmt.Errorf("%d is not %d-%d", n, Minimum, Maximum)
	}
	return Setting{Fixed: n}, nil
}

// Overhead is WireGuard's overhead over endpoints of the family ipv6 says.
func Overhead(ipv6 bool) int {
	if ipv6 {
		return OverheadIPv6
	}
	return OverheadIPv4
}

// Device is the MTU of a device over a path of path bytes (0: unknown) to endpoints of the
// family ipv6 says: the path less the overhead, never below Minimum.
func Device(path int, ipv6 bool) int {
	if path <= 0 {
		return Unknown
	}
	return max(path-Overhead(ipv6), Minimum)
}

// Path is the path MTU toward a remote: the smallest of own and published that is known (not
// 0); 0 when none is.
func Path(own int, published []int) int {
	path := own
	for _, p := range published {
		if p > 0 && (path == 0 || p < path) {
			path = p
		}
	}
	return path
}

// ParsePublished reads the path MTU a remote node published: a number from Minimum to 65535.
// Anything else is refused, so that a remote cannot shrink the device below Minimum less the
// overhead.
func ParsePublished(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < Minimum {
		return 0, fmt.Errorf("%d is below the minimum of %d", n, Minimum)
	}
	if n > maxPublished {
		return 0, fmt.Errorf("%d is more than an IP packet holds", n)
	}
	return n, nil
}
