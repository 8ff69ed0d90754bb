package device

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
)

// underlay adds a veth pair, name and its peer name+"p", both up, with mtu and addr (CIDR) on
// name: an underlay link of this test's network namespace.
func underlay(t *testing.T, name string, mtu int, addr string) netlink.Link {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: name + "p"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	link := mustLink(t, name)
	if err := netlink.AddrAdd(link, a); err != nil {
		t.Fatal(err)
	}
	for _, l := range []netlink.Link{link, mustLink(t, name+"p")} {
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return link
}

// A device's MTU is read and changed in place, once: the same MTU again writes nothing. An
// absent device is not found.
func TestSetMTUChangesADeviceInPlace(t *testing.T) {
	m := newDevice(t, "wg-smp-mtu", 51890)
	if got, err := m.MTU("wg-smp-mtu"); err != nil || got != 1420 {
		t.Fatalf("MTU = %d, %v; want 1420", got, err)
	}
	if err := m.SetMTU("wg-smp-mtu", 1380); err != nil {
		t.Fatal(err)
	}
	if got := mustLink(t, "wg-smp-mtu").Attrs().MTU; got != 1380 {
		t.Errorf("link MTU %d after SetMTU(1380)", got)
	}
	before := m.Counters()
	if err := m.SetMTU("wg-smp-mtu", 1380); err != nil {
		t.Fatal(err)
	}
	if got := m.Counters(); got != before {
		t.Errorf("SetMTU of the same MTU wrote: %+v -> %+v", before, got)
	}
	if err := m.SetMTU("wg-smp-mtu", 100); err == nil {
		t.Error("SetMTU(100): no error")
	}
	if _, err := m.MTU("wg-smp-none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MTU of an absent device: %v, want ErrNotFound", err)
	}
	if got := m.Implementation(); got != "userspace" {
		t.Errorf("Implementation() = %q", got)
	}
}

// The path MTU toward an address is its route's own MTU when the route has one, else its link's;
// the default path is the default route's, or without one the link holding the node's address.
func TestPathMTUIsTheRoutesThenTheLinks(t *testing.T) {
	m := newUserspace(t)
	link := underlay(t, "smp-ul", 1460, "192.0.2.1/24")
	if got, err := m.PathMTU(netip.MustParseAddr("192.0.2.9")); err != nil || got != 1460 {
		t.Errorf("PathMTU on the link = %d, %v; want the link's 1460", got, err)
	}
	if got, err := m.DefaultPathMTU(netip.MustParseAddr("192.0.2.1")); err != nil || got != 1460 {
		t.Errorf("DefaultPathMTU without a default route = %d, %v; want the link's 1460", got, err)
	}
	if got, err := m.DefaultPathMTU(netip.Addr{}); err == nil {
		t.Errorf("DefaultPathMTU without a default route nor an address = %d, want an error", got)
	}
	gw := net.ParseIP("192.0.2.254")
	_, other, _ := net.ParseCIDR("198.51.100.0/24")
	for _, r := range []*netlink.Route{
		{LinkIndex: link.Attrs().Index, Dst: other, Gw: gw, MTU: 1400},
		{LinkIndex: link.Attrs().Index, Gw: gw, MTU: 1300},
	} {
		if err := netlink.RouteAdd(r); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m.PathMTU(netip.MustParseAddr("198.51.100.7")); err != nil || got != 1400 {
		t.Errorf("PathMTU over a route with an MTU = %d, %v; want 1400", got, err)
	}
	if got, err := m.PathMTU(netip.MustParseAddr("203.0.113.7")); err != nil || got != 1300 {
		t.Errorf("PathMTU over the default route = %d, %v; want 1300", got, err)
	}
	for _, local := range []netip.Addr{netip.MustParseAddr("192.0.2.1"), {}} {
		if got, err := m.DefaultPathMTU(local); err != nil || got != 1300 {
			t.Errorf("DefaultPathMTU(%v) = %d, %v; want the default route's 1300", local, got, err)
		}
	}
	if got, err := m.PathMTU(netip.MustParseAddr("2001:db8::1")); err == nil {
		t.Errorf("PathMTU without an IPv6 route = %d, want an error", got)
	}
}
