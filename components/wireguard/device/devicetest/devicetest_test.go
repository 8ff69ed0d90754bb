package devicetest_test

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
)

// Peer changes follow wgctrl: unset fields stay, UpdateOnly never adds, Remove removes; only
// calls with changes count as writes.
func TestPeerChangesFollowWgctrl(t *testing.T) {
	devs := devicetest.New()
	if err := devs.Ensure("wg-a", devicetest.Key(t), 51821, 1420); err != nil {
		t.Fatal(err)
	}
	a, b, c := devicetest.Key(t).PublicKey(), devicetest.Key(t).PublicKey(), devicetest.Key(t).PublicKey()
	keepalive := 25 * time.Second
	_, pod, _ := net.ParseCIDR("198.18.1.0/24")
	configure := func(changes ...wgtypes.PeerConfig) {
		t.Helper()
		if err := devs.ConfigurePeers("wg-a", changes); err != nil {
			t.Fatal(err)
		}
	}
	configure(
		wgtypes.PeerConfig{PublicKey: a, Endpoint: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51821}, PersistentKeepaliveInterval: &keepalive},
		wgtypes.PeerConfig{PublicKey: b, UpdateOnly: true},
		wgtypes.PeerConfig{PublicKey: c},
	)
	configure(
		wgtypes.PeerConfig{PublicKey: a, ReplaceAllowedIPs: true, AllowedIPs: []net.IPNet{*pod}},
		wgtypes.PeerConfig{PublicKey: c, Remove: true},
	)
	configure()

	want := map[string]string{a.String(): "192.0.2.1:51821"}
	if diff := cmp.Diff(want, devs.Endpoints("wg-a")); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{a.String(): {"198.18.1.0/24"}}, devs.AllowedIPs("wg-a")); diff != "" {
		t.Errorf("allowed IPs (-want +got):\n%s", diff)
	}
	if ps, err := devs.Peers("wg-a"); err != nil || len(ps) != 1 || ps[0].PersistentKeepaliveInterval != keepalive {
		t.Errorf("peers %+v, %v; want a's with its keepalive", ps, err)
	}
	if got := devs.Counts(); got != (devicetest.Counts{Configs: 2, PeerChanges: 5}) {
		t.Errorf("counts %+v, want 2 configurations of 5 peer changes", got)
	}

	devs.Roam("wg-a", a, "203.0.113.7:40001")
	if got := devs.Endpoints("wg-a")[a.String()]; got != "203.0.113.7:40001" {
		t.Errorf("endpoint after roaming %q", got)
	}
}

// Routes are replaced as a whole and counted; a device that was not ensured is not found; a
// deleted one is gone.
func TestRoutesAndDeviceLifecycle(t *testing.T) {
	devs := devicetest.New()
	if _, err := devs.Peers("wg-a"); !errors.Is(err, device.ErrNotFound) {
		t.Errorf("Peers of an absent device: %v, want ErrNotFound", err)
	}
	for _, name := range []string{"wg-b", "wg-a", "other"} {
		if err := devs.Ensure(name, devicetest.Key(t), 0, 1420); err != nil {
			t.Fatal(err)
		}
	}
	nets := func(ss ...string) []net.IPNet {
		var out []net.IPNet
		for _, s := range ss {
			_, n, _ := net.ParseCIDR(s)
			out = append(out, *n)
		}
		return out
	}
	if added, removed, err := devs.SyncRoutes("wg-a", nets("198.18.2.0/24", "198.18.1.0/24")); added != 2 || removed != 0 || err != nil {
		t.Errorf("first sync: added %d, removed %d, %v", added, removed, err)
	}
	if added, removed, err := devs.SyncRoutes("wg-a", nets("198.18.1.0/24", "fd00::/64")); added != 1 || removed != 1 || err != nil {
		t.Errorf("second sync: added %d, removed %d, %v", added, removed, err)
	}
	if diff := cmp.Diff([]string{"198.18.1.0/24", "fd00::/64"}, devs.Routes("wg-a")); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}

	if err := devs.Delete("wg-b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := devs.Devices("wg-"); !cmp.Equal(got, []string{"wg-a"}) {
		t.Errorf("devices %v, want only wg-a", got)
	}
}

// A device keeps the MTU it was ensured or set with; the underlay's path MTU is the longest
// prefix set, else DefaultPathMTU. A roam is a handshake now; Handshake sets another time.
func TestMTUsPathsAndHandshakes(t *testing.T) {
	devs := devicetest.New()
	if _, err := devs.MTU("wg-a"); !errors.Is(err, device.ErrNotFound) {
		t.Errorf("MTU of an absent device: %v, want ErrNotFound", err)
	}
	if err := devs.Ensure("wg-a", devicetest.Key(t), 51821, 1420); err != nil {
		t.Fatal(err)
	}
	if err := devs.SetMTU("wg-a", 1380); err != nil {
		t.Fatal(err)
	}
	if got, err := devs.MTU("wg-a"); err != nil || got != 1380 {
		t.Errorf("MTU = %d, %v; want 1380", got, err)
	}
	devs.SetPathMTU(netip.MustParsePrefix("192.0.2.0/24"), 1460)
	devs.SetPathMTU(netip.MustParsePrefix("192.0.2.0/28"), 1400)
	devs.SetPathMTU(netip.MustParsePrefix("::/0"), 1280)
	for addr, want := range map[string]int{"192.0.2.1": 1400, "192.0.2.100": 1460, "198.51.100.1": devicetest.DefaultPathMTU, "2001:db8::1": 1280} {
		if got, err := devs.PathMTU(netip.MustParseAddr(addr)); err != nil || got != want {
			t.Errorf("PathMTU(%s) = %d, %v; want %d", addr, got, err, want)
		}
	}
	if got, _ := devs.DefaultPathMTU(netip.MustParseAddr("2001:db8::5")); got != 1280 {
		t.Errorf("DefaultPathMTU of an IPv6 node = %d, want ::/0's 1280", got)
	}
	if got, _ := devs.DefaultPathMTU(netip.Addr{}); got != devicetest.DefaultPathMTU {
		t.Errorf("DefaultPathMTU = %d, want %d", got, devicetest.DefaultPathMTU)
	}

	peer := devicetest.Key(t).PublicKey()
	if err := devs.ConfigurePeers("wg-a", []wgtypes.PeerConfig{{PublicKey: peer}}); err != nil {
		t.Fatal(err)
	}
	devs.Roam("wg-a", peer, "203.0.113.7:40001")
	ps, _ := devs.Peers("wg-a")
	if len(ps) != 1 || time.Since(ps[0].LastHandshakeTime) > time.Minute {
		t.Errorf("after a roam: %+v, want a handshake now", ps)
	}
	at := time.Unix(1700000000, 0)
	devs.Handshake("wg-a", peer, at)
	if ps, _ := devs.Peers("wg-a"); !ps[0].LastHandshakeTime.Equal(at) {
		t.Errorf("handshake %v, want %v", ps[0].LastHandshakeTime, at)
	}
}
