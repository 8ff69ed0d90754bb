package device

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// SyncGatewayRoutes makes our routes through a gateway be want (with prune, exactly want; without,
// those not wanted are left, for a caller that does not know all it wants yet): each destination
// routed to its next hop, an address on a network this host is on (the active gateway of the
// remote the destination belongs to, on the cluster's own network). Ours are the main-table
// routes that carry RouteProtocol and have a next hop; the routes of our devices (no next hop)
// and routes without our marker are never touched. A destination whose next hop changed (another
// gateway was elected) is replaced in place, so that its traffic never meets a missing route; a
// wanted destination someone else routes is an error for it, not overwritten. Errors for single
// routes do not stop the others.
func (m *Manager) SyncGatewayRoutes(want map[netip.Prefix]netip.Addr, prune bool) (added, replaced, removed int, err error) {
	have, err := ourGatewayRoutes()
	if err != nil {
		return 0, 0, 0, err
	}
	want = masked(want)
	var errs []error
	kept := map[netip.Prefix]bool{}
	for _, r := range have {
		dst, gw := gatewayRoute(r)
		next, wanted := want[dst]
		switch {
		case wanted && next == gw && !kept[dst]:
			kept[dst] = true
			continue
		case wanted && !kept[dst]:
			kept[dst] = true
			m.routeChanges.Add(1)
			if err := netlink.RouteReplace(newGatewayRoute(dst, next)); err != nil {
				errs = append(errs, fmt.Errorf("route %s through %s instead of %s: %w", dst, next, gw, err))
				continue
			}
			replaced++
			m.log.Info("route moved to another gateway", "route", dst, "gateway", next, "was", gw)
			continue
		case !wanted && !prune:
			continue
		}
		m.routeChanges.Add(1)
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s through %s: %w", dst, gw, err))
			continue
		}
		removed++
		m.log.Info("route through a gateway removed", "route", dst, "gateway", gw)
	}
	for _, dst := range slices.SortedFunc(maps.Keys(want), comparePrefixes) {
		if kept[dst] {
			continue
		}
		m.routeChanges.Add(1)
		if err := netlink.RouteAdd(newGatewayRoute(dst, want[dst])); err != nil {
			if errors.Is(err, unix.EEXIST) {
				err = fmt.Errorf("a route we do not own already exists for this destination: %w", err)
			}
			errs = append(errs, fmt.Errorf("add route %s through %s: %w", dst, want[dst], err))
			continue
		}
		added++
		m.log.Info("route through a gateway added", "route", dst, "gateway", want[dst])
	}
	return added, replaced, removed, errors.Join(errs...)
}

// masked is want with every destination masked: 198.18.1.7/24 names 198.18.1.0/24.
func masked(want map[netip.Prefix]netip.Addr) map[netip.Prefix]netip.Addr {
	out := make(map[netip.Prefix]netip.Addr, len(want))
	for dst, gw := range want {
		out[dst.Masked()] = gw
	}
	return out
}

// ourGatewayRoutes lists the main-table routes that carry RouteProtocol and have a next hop.
func ourGatewayRoutes() ([]netlink.Route, error) {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return slices.DeleteFunc(routes, func(r netlink.Route) bool { return r.Gw == nil }), nil
}

// gatewayRoute is a route's destination and next hop.
func gatewayRoute(r netlink.Route) (netip.Prefix, netip.Addr) {
	dst := routeDst(r)
	ones, _ := dst.Mask.Size()
	a, _ := netip.AddrFromSlice(dst.IP)
	gw, _ := netip.AddrFromSlice(r.Gw)
	return netip.PrefixFrom(a.Unmap(), ones), gw.Unmap()
}

// newGatewayRoute is a route of ours to dst through the next hop gw.
func newGatewayRoute(dst netip.Prefix, gw netip.Addr) *netlink.Route {
	dst = dst.Masked()
	return &netlink.Route{
		Dst:      &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
		Gw:       gw.AsSlice(),
		Protocol: RouteProtocol,
	}
}

func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
