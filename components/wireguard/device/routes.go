package device

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes this package installs (the rtm_protocol field, the
// "proto" column of `ip route`). We list and delete only routes that carry it on the
// device at hand, so routes put there by an operator, the kernel or another agent are
// never touched. 0x53 (83, 'S' for semaphore) is outside the values the kernel and
// iproute2 reserve (0-4 kernel, 8-18, 42, 99, 186-192 routing daemons in
// /etc/iproute2/rt_protos) and is not used by Calico (which uses boot/3, bird/12 and 80)
// or the other CNIs we know of. `ip route show proto 83` lists our routes.
const RouteProtocol netlink.RouteProtocol = 0x53

// SyncRoutes makes the routes via device name that carry RouteProtocol be exactly want
// (IPv4 and IPv6, main table): missing ones are added, ours that are no longer wanted
// are removed. Routes without our marker are neither listed nor removed; a wanted
// destination already routed by someone else is reported as an error for that prefix,
// not overwritten. Errors for single routes do not stop the others.
func (m *Manager) SyncRoutes(name string, want []net.IPNet) (added, removed int, err error) {
	link, err := linkByName(name)
	if err != nil {
		return 0, 0, fmt.Errorf("device %s: %w", name, err)
	}
	if link == nil {
		return 0, 0, fmt.Errorf("device %s: %w", name, ErrNotFound)
	}
	return m.syncRoutes(link, want)
}

// OurRoutes returns the destinations of the routes via device name that carry
// RouteProtocol, sorted.
func (m *Manager) OurRoutes(name string) ([]net.IPNet, error) {
	link, err := linkByName(name)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	if link == nil {
		return nil, fmt.Errorf("device %s: %w", name, ErrNotFound)
	}
	routes, err := ourRoutes(link)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	out := make([]net.IPNet, 0, len(routes))
	for _, r := range routes {
		out = append(out, routeDst(r))
	}
	slices.SortFunc(out, func(a, b net.IPNet) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

func (m *Manager) syncRoutes(link netlink.Link, want []net.IPNet) (added, removed int, err error) {
	name := link.Attrs().Name
	have, err := ourRoutes(link)
	if err != nil {
		return 0, 0, fmt.Errorf("device %s: %w", name, err)
	}
	wanted, err := destinations(want)
	if err != nil {
		return 0, 0, fmt.Errorf("device %s: %w", name, err)
	}
	removed, kept, errs := m.removeUnwanted(name, have, wanted)
	added, addErrs := m.addMissing(link, wanted, kept)
	if errs = append(errs, addErrs...); len(errs) > 0 {
		return added, removed, fmt.Errorf("device %s: %w", name, errors.Join(errs...))
	}
	return added, removed, nil
}

// destinations are want normalized, by their string form.
func destinations(want []net.IPNet) (map[string]net.IPNet, error) {
	wanted := make(map[string]net.IPNet, len(want))
	for _, w := range want {
		n, err := normalize(w)
		if err != nil {
			return nil, err
		}
		wanted[n.String()] = n
	}
	return wanted, nil
}

// removeUnwanted deletes the routes of have, ours via device name, whose destination is not
// wanted, and those that route a wanted destination a second time. kept are the wanted
// destinations routed already.
func (m *Manager) removeUnwanted(name string, have []netlink.Route, wanted map[string]net.IPNet) (removed int, kept map[string]bool, errs []error) {
	kept = make(map[string]bool, len(have))
	for _, r := range have {
		dst := routeDst(r)
		k := dst.String()
		if _, ok := wanted[k]; ok && !kept[k] {
			kept[k] = true
			continue
		}
		m.routeChanges.Add(1)
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s: %w", k, err))
			continue
		}
		removed++
		m.log.Info("route removed", "device", name, "route", k)
	}
	return removed, kept, errs
}

// addMissing adds, in order, a route via link, marked ours, to each wanted destination not
// kept already.
func (m *Manager) addMissing(link netlink.Link, wanted map[string]net.IPNet, kept map[string]bool) (added int, errs []error) {
	keys := make([]string, 0, len(wanted))
	for k := range wanted {
		if !kept[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst := wanted[k]
		r := &netlink.Route{
			LinkIndex: link.Attrs().Index,
			Dst:       &dst,
			Protocol:  RouteProtocol,
		}
		if dst.IP.To4() != nil {
			r.Scope = netlink.SCOPE_LINK
		}
		m.routeChanges.Add(1)
		if err := netlink.RouteAdd(r); err != nil {
			if errors.Is(err, unix.EEXIST) {
				err = fmt.Errorf("a route we do not own already exists for this destination: %w", err)
			}
			errs = append(errs, fmt.Errorf("add route %s: %w", k, err))
			continue
		}
		added++
		m.log.Info("route added", "device", link.Attrs().Name, "route", k)
	}
	return added, errs
}

// ourRoutes lists the main-table routes via link that carry RouteProtocol.
func ourRoutes(link netlink.Link) ([]netlink.Route, error) {
	filter := &netlink.Route{LinkIndex: link.Attrs().Index, Protocol: RouteProtocol}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return routes, nil
}

// routeDst returns a route's destination; netlink leaves it nil for default routes.
func routeDst(r netlink.Route) net.IPNet {
	if r.Dst != nil {
		return *r.Dst
	}
	if r.Family == netlink.FAMILY_V6 {
		return net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	}
	return net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
}

// normalize returns n with its address masked and in its shortest form, so that
// 198.18.1.7/24 and 198.18.1.0/24 name the same route and compare equal.
func normalize(n net.IPNet) (net.IPNet, error) {
	ones, bits := n.Mask.Size()
	ip := n.IP
	if ip4 := ip.To4(); ip4 != nil && bits == 32 {
		ip = ip4
	}
	if bits == 0 || len(ip)*8 != bits {
		return net.IPNet{}, fmt.Errorf("invalid route destination %v", n.String())
	}
	return net.IPNet{IP: ip.Mask(n.Mask), Mask: net.CIDRMask(ones, bits)}, nil
}
