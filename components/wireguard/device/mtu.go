package device

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// MTU returns the MTU of device name.
func (m *Manager) MTU(name string) (int, error) {
	link, err := existingLink(name)
	if err != nil {
		return 0, err
	}
	return link.Attrs().MTU, nil
}

// SetMTU sets the MTU of device name when it differs. Kernel and userspace devices alike: a
// userspace device follows the MTU of its TUN link.
func (m *Manager) SetMTU(name string, mtu int) error {
	if err := checkMTU(mtu); err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	link, err := existingLink(name)
	if err != nil {
		return err
	}
	if err := m.setMTU(link, mtu); err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	return nil
}

// setMTU sets the MTU of link when it differs. The caller holds m.mu.
func (m *Manager) setMTU(link netlink.Link, mtu int) error {
	if link.Attrs().MTU == mtu {
		return nil
	}
	m.linkChanges.Add(1)
	if err := netlink.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("set MTU %d: %w", mtu, err)
	}
	m.log.Info("WireGuard device MTU set", "device", link.Attrs().Name, "mtu", mtu, "was", link.Attrs().MTU)
	return nil
}

func checkMTU(mtu int) error {
	if mtu < 576 || mtu > 65535 {
		return fmt.Errorf("invalid MTU %d", mtu)
	}
	return nil
}

// existingLink is the link of device name, or an error wrapping ErrNotFound when there is none.
func existingLink(name string) (netlink.Link, error) {
	link, err := linkByName(name)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	if link == nil {
		return nil, fmt.Errorf("device %s: %w", name, ErrNotFound)
	}
	return link, nil
}

// PathMTU is the MTU of the route this host takes toward dst (`ip route get`): the route's own
// MTU when it has one (an mtu metric, or one learned from an ICMP "fragmentation needed"), else
// its outgoing link's.
func (m *Manager) PathMTU(dst netip.Addr) (int, error) {
	routes, err := netlink.RouteGet(dst.AsSlice())
	if err != nil {
		return 0, fmt.Errorf("route to %s: %w", dst, err)
	}
	if len(routes) == 0 {
		return 0, fmt.Errorf("no route to %s", dst)
	}
	return routeMTU(routes[0])
}

// DefaultPathMTU is the MTU of this host's default route of the family of local (IPv4 when local
// is invalid), as PathMTU reads a route's; without a default route, the MTU of the link that
// holds local.
func (m *Manager) DefaultPathMTU(local netip.Addr) (int, error) {
	family := netlink.FAMILY_V4
	if local.Is6() && !local.Is4In6() {
		family = netlink.FAMILY_V6
	}
	routes, err := netlink.RouteList(nil, family)
	if err != nil {
		return 0, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if prefixLen(r) == 0 {
			return routeMTU(r)
		}
	}
	if !local.IsValid() {
		return 0, errors.New("no default route")
	}
	return linkMTUHolding(local.Unmap(), family)
}

// prefixLen is the prefix length of r's destination: 0 for the default route.
func prefixLen(r netlink.Route) int {
	if r.Dst == nil {
		return 0
	}
	ones, _ := r.Dst.Mask.Size()
	return ones
}

// linkMTUHolding is the MTU of the link that holds address a.
func linkMTUHolding(a netip.Addr, family int) (int, error) {
	addrs, err := netlink.AddrList(nil, family)
	if err != nil {
		return 0, fmt.Errorf("list addresses: %w", err)
	}
	for _, ad := range addrs {
		if own, ok := netip.AddrFromSlice(ad.IP); ok && own.Unmap() == a {
			link, err := netlink.LinkByIndex(ad.LinkIndex)
			if err != nil {
				return 0, fmt.Errorf("link of %s: %w", a, err)
			}
			return link.Attrs().MTU, nil
		}
	}
	return 0, fmt.Errorf("no default route, and no link holds %s", a)
}

// routeMTU is r's own MTU, else its outgoing link's.
func routeMTU(r netlink.Route) (int, error) {
	if r.MTU > 0 {
		return r.MTU, nil
	}
	link, err := netlink.LinkByIndex(r.LinkIndex)
	if err != nil {
		return 0, fmt.Errorf("link of the route to %v: %w", r.Dst, err)
	}
	return link.Attrs().MTU, nil
}

// Implementation is the WireGuard implementation of this Manager's devices: "kernel" or
// "userspace".
func (m *Manager) Implementation() string { return string(m.mode) }
