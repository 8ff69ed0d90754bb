package device

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// The tests that touch the network run inside private network and mount namespaces (with a
// tmpfs over /run, so /var/run/wireguard is ours alone), never in the host's: TestMain runs
// them through testenv.RunInNamespaces. The two-node test starts a second node the same way
// (envHelper), in namespaces of its own.
const envHelper = "SEMAPHORE_DEVICE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) != "" {
		os.Exit(helperMain())
	}
	os.Exit(testenv.RunInNamespaces(m))
}

func needSandbox(t *testing.T) {
	t.Helper()
	testenv.RequireNamespaces(t)
	if _, err := os.Stat(tunPath); err != nil {
		t.Skip("needs " + tunPath + " for userspace WireGuard: " + err.Error())
	}
}

// testLogger logs through t until the test ends; wireguard-go goroutines may still log
// while a device shuts down, and t.Log after the end panics.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

func newUserspace(t *testing.T) *Manager {
	t.Helper()
	needSandbox(t)
	m, err := NewManager(ModeUserspace, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		deleteUserspaceLinks(t)
	})
	return m
}

// deleteUserspaceLinks deletes every link of our userspace devices, which outlive their
// Manager, so that each test starts without the previous tests' devices.
func deleteUserspaceLinks(t *testing.T) {
	links, err := netlink.LinkList()
	if err != nil {
		t.Errorf("list links: %v", err)
		return
	}
	for _, l := range links {
		if ownedUserspaceLink(l) {
			if err := netlink.LinkDel(l); err != nil {
				t.Errorf("delete %s: %v", l.Attrs().Name, err)
			}
		}
	}
}

// newDevice returns a userspace Manager holding device name, listening on port, MTU 1420.
func newDevice(t *testing.T, name string, port int) *Manager {
	t.Helper()
	m := newUserspace(t)
	if err := m.Ensure(name, genKey(t), port, 1420); err != nil {
		t.Fatal(err)
	}
	return m
}

func genKey(t *testing.T) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func cidr(t *testing.T, s string) net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return *n
}

func cidrs(t *testing.T, ss ...string) []net.IPNet {
	t.Helper()
	var out []net.IPNet
	for _, s := range ss {
		out = append(out, cidr(t, s))
	}
	return out
}

func mustLink(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

func linkExists(t *testing.T, name string) bool {
	t.Helper()
	l, err := linkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l != nil
}

// peerView is what ConfigurePeers sets, in comparable form.
type peerView struct {
	Endpoint   string
	AllowedIPs []string
	Keepalive  time.Duration
}

func viewPeers(peers []wgtypes.Peer) map[string]peerView {
	out := map[string]peerView{}
	for _, p := range peers {
		v := peerView{Keepalive: p.PersistentKeepaliveInterval}
		if p.Endpoint != nil {
			v.Endpoint = p.Endpoint.String()
		}
		for _, a := range p.AllowedIPs {
			v.AllowedIPs = append(v.AllowedIPs, a.String())
		}
		slices.Sort(v.AllowedIPs)
		out[p.PublicKey.String()] = v
	}
	return out
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"auto", "kernel", "userspace"} {
		if m, err := parseMode(s); err != nil || string(m) != s {
			t.Errorf("parseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := parseMode("fast"); err == nil {
		t.Error("parseMode(fast): no error")
	}
	if _, err := NewManager("fast", nil); err == nil {
		t.Error("NewManager(fast): no error")
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"wg-smp-aws", "wg-smp-12345678"} {
		if err := validName(ok); err != nil {
			t.Errorf("validName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "wg-smp-123456789", "a/b", "a b", "wg%d", ".."} {
		if err := validName(bad); err == nil {
			t.Errorf("validName(%q): no error", bad)
		}
	}
}

func TestNewManagerResolvesMode(t *testing.T) {
	needSandbox(t)
	log := testLogger(t)
	auto, err := NewManager(ModeAuto, log)
	if err != nil {
		t.Fatal(err)
	}
	defer auto.Close()
	kernelErr := probeKernel()
	want := ModeKernel
	if kernelErr != nil {
		want = ModeUserspace
	}
	if auto.resolvedMode() != want {
		t.Errorf("auto resolved to %s, want %s (probe: %v)", auto.resolvedMode(), want, kernelErr)
	}
	if kernelErr != nil {
		if _, err := NewManager(ModeKernel, log); err == nil || !strings.Contains(err.Error(), "kernel WireGuard is not available") {
			t.Errorf("NewManager(kernel) without kernel support: err = %v", err)
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, "smp-probe") {
			t.Errorf("probe link %s left behind", l.Attrs().Name)
		}
	}
}

func TestEnsureCreatesUserspaceDevice(t *testing.T) {
	m := newUserspace(t)
	const name = "wg-smp-create"
	key := genKey(t)
	if err := m.Ensure(name, key, 51820, 1380); err != nil {
		t.Fatal(err)
	}

	dev, err := m.wg.Device(name)
	if err != nil {
		t.Fatalf("wgctrl does not see %s: %v", name, err)
	}
	if dev.PrivateKey != key || dev.PublicKey != key.PublicKey() || dev.ListenPort != 51820 {
		t.Errorf("device = key %s port %d, want key %s port 51820", dev.PublicKey, dev.ListenPort, key.PublicKey())
	}
	link := mustLink(t, name)
	if link.Attrs().MTU != 1380 || link.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("link mtu %d flags %v, want 1380 and up", link.Attrs().MTU, link.Attrs().Flags)
	}
	if _, err := os.Stat(socketPath(name)); err != nil {
		t.Errorf("UAPI socket: %v", err)
	}
	// The UDP port is really bound (wireguard-go binds when the device comes up).
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: 51820}); err == nil {
		c.Close()
		t.Error("port 51820 is free: the device did not bind it")
	}

	// Devices lists WireGuard devices with the prefix only, not other links.
	other := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wg-smp-other"}, PeerName: "smp-other-peer"}
	if err := netlink.LinkAdd(other); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netlink.LinkDel(other) }()
	got, err := m.Devices("wg-smp-")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{name}, got); diff != "" {
		t.Errorf("Devices (-want +got):\n%s", diff)
	}
	if got, _ := m.Devices("other-"); len(got) != 0 {
		t.Errorf("Devices(other-) = %v", got)
	}
	// And never deletes or configures a link that is not WireGuard.
	if err := m.Delete("wg-smp-other"); err == nil {
		t.Error("Delete of a veth link: no error")
	}
	if !linkExists(t, "wg-smp-other") {
		t.Error("Delete removed a link that is not a WireGuard device")
	}
	if err := m.Ensure("wg-smp-other", key, 51821, 1420); err == nil {
		t.Error("Ensure on a veth link: no error")
	}
}

func TestEnsureInSyncMakesNoWrites(t *testing.T) {
	m := newUserspace(t)
	const name = "wg-smp-sync"
	key := genKey(t)
	if err := m.Ensure(name, key, 51830, 1420); err != nil {
		t.Fatal(err)
	}
	peer := genKey(t).PublicKey()
	if err := m.ConfigurePeers(name, []wgtypes.PeerConfig{{
		PublicKey:  peer,
		Endpoint:   &net.UDPAddr{IP: net.ParseIP("192.0.2.10"), Port: 51830},
		AllowedIPs: cidrs(t, "198.18.10.0/24"),
	}}); err != nil {
		t.Fatal(err)
	}
	before := m.Counters()
	devBefore, err := m.wg.Device(name)
	if err != nil {
		t.Fatal(err)
	}

	for range 3 {
		if err := m.Ensure(name, key, 51830, 1420); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Counters(); got != before {
		t.Errorf("in-sync Ensure wrote to the host: counters %+v -> %+v", before, got)
	}
	devAfter, err := m.wg.Device(name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(devBefore, devAfter); diff != "" {
		t.Errorf("in-sync Ensure changed the device (-before +after):\n%s", diff)
	}

	// A new port is one configuration call, and leaves the peers alone.
	if err := m.Ensure(name, key, 51831, 1420); err != nil {
		t.Fatal(err)
	}
	if got := m.Counters(); got.DeviceConfigs != before.DeviceConfigs+1 || got.LinkChanges != before.LinkChanges {
		t.Errorf("port change: counters %+v -> %+v, want exactly one device configuration", before, got)
	}
	dev, err := m.wg.Device(name)
	if err != nil {
		t.Fatal(err)
	}
	if dev.ListenPort != 51831 {
		t.Errorf("listen port %d, want 51831", dev.ListenPort)
	}
	if diff := cmp.Diff(viewPeers(devBefore.Peers), viewPeers(dev.Peers)); diff != "" {
		t.Errorf("port change touched peers (-before +after):\n%s", diff)
	}

	// A new MTU is one link write and no device configuration.
	before = m.Counters()
	if err := m.Ensure(name, key, 51831, 1400); err != nil {
		t.Fatal(err)
	}
	if got := m.Counters(); got.LinkChanges != before.LinkChanges+1 || got.DeviceConfigs != before.DeviceConfigs {
		t.Errorf("MTU change: counters %+v -> %+v", before, got)
	}
	if mtu := mustLink(t, name).Attrs().MTU; mtu != 1400 {
		t.Errorf("MTU %d, want 1400", mtu)
	}

	// A new key is applied (a rotated key file must take effect).
	key2 := genKey(t)
	if err := m.Ensure(name, key2, 51831, 1400); err != nil {
		t.Fatal(err)
	}
	if dev, _ := m.wg.Device(name); dev == nil || dev.PrivateKey != key2 {
		t.Error("new private key not applied")
	}
}

func TestConfigurePeersTouchesOnlyChanges(t *testing.T) {
	const name = "wg-smp-peers"
	m := newDevice(t, name, 51840)
	keepalive := 25 * time.Second
	a, b, c, d := genKey(t).PublicKey(), genKey(t).PublicKey(), genKey(t).PublicKey(), genKey(t).PublicKey()
	peer := func(k wgtypes.Key, host int, pod string) wgtypes.PeerConfig {
		return wgtypes.PeerConfig{
			PublicKey:                   k,
			Endpoint:                    &net.UDPAddr{IP: net.IPv4(192, 0, 2, byte(host)), Port: 51820},
			PersistentKeepaliveInterval: &keepalive,
			ReplaceAllowedIPs:           true,
			AllowedIPs:                  cidrs(t, pod),
		}
	}
	if err := m.ConfigurePeers(name, []wgtypes.PeerConfig{
		peer(a, 1, "198.18.1.0/24"), peer(b, 2, "198.18.2.0/24"), peer(c, 3, "198.18.3.0/24"),
	}); err != nil {
		t.Fatal(err)
	}
	peers, err := m.Peers(name)
	if err != nil {
		t.Fatal(err)
	}
	before := viewPeers(peers)
	if len(before) != 3 {
		t.Fatalf("peers = %v, want 3", before)
	}

	// No changes: no call.
	counters := m.Counters()
	if err := m.ConfigurePeers(name, nil); err != nil {
		t.Fatal(err)
	}
	if m.Counters() != counters {
		t.Error("ConfigurePeers(nil) made a call")
	}

	// Update b (new endpoint and pod CIDRs), remove c, add d: a is not mentioned.
	updated := peer(b, 22, "198.18.22.0/24")
	updated.AllowedIPs = append(updated.AllowedIPs, cidr(t, "fd00:22::/64"))
	if err := m.ConfigurePeers(name, []wgtypes.PeerConfig{
		updated,
		{PublicKey: c, Remove: true},
		peer(d, 4, "198.18.4.0/24"),
	}); err != nil {
		t.Fatal(err)
	}
	if got := m.Counters().DeviceConfigs - counters.DeviceConfigs; got != 1 {
		t.Errorf("%d configuration calls, want 1", got)
	}
	peers, err = m.PeerStats(name)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]peerView{
		a.String(): before[a.String()],
		b.String(): {Endpoint: "192.0.2.22:51820", AllowedIPs: []string{"198.18.22.0/24", "fd00:22::/64"}, Keepalive: keepalive},
		d.String(): {Endpoint: "192.0.2.4:51820", AllowedIPs: []string{"198.18.4.0/24"}, Keepalive: keepalive},
	}
	if diff := cmp.Diff(want, viewPeers(peers)); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}

	if _, err := m.Peers("wg-smp-absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Peers of an absent device: err = %v, want ErrNotFound", err)
	}
	if err := m.ConfigurePeers("wg-smp-absent", []wgtypes.PeerConfig{peer(a, 1, "198.18.1.0/24")}); !errors.Is(err, ErrNotFound) {
		t.Errorf("ConfigurePeers on an absent device: err = %v, want ErrNotFound", err)
	}
}

// routeSet lists the routes via link in the main table as "dst proto N".
func routeSet(t *testing.T, link netlink.Link) []string {
	t.Helper()
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: link.Attrs().Index}, netlink.RT_FILTER_OIF)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsLinkLocalUnicast() || r.Dst.IP.IsMulticast() {
			continue // the kernel's own fe80::/64 and multicast routes
		}
		out = append(out, fmt.Sprintf("%s proto %d", r.Dst, int(r.Protocol)))
	}
	slices.Sort(out)
	return out
}

func TestSyncRoutesOnlyTouchesOurs(t *testing.T) {
	const name = "wg-smp-routes"
	m := newDevice(t, name, 51850)
	link := mustLink(t, name)

	// Someone else's routes on the same device, IPv4 and IPv6.
	for _, dst := range []string{"198.18.99.0/24", "fd00:99::/64"} {
		d := cidr(t, dst)
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: &d, Protocol: unix.RTPROT_STATIC}
		if d.IP.To4() != nil {
			r.Scope = netlink.SCOPE_LINK
		}
		if err := netlink.RouteAdd(r); err != nil {
			t.Fatalf("add foreign route %s: %v", dst, err)
		}
	}
	foreign := []string{"198.18.99.0/24 proto 4", "fd00:99::/64 proto 4"}

	// 198.18.1.9/24 is not canonical: it names 198.18.1.0/24.
	added, removed, err := m.SyncRoutes(name, cidrs(t, "198.18.1.9/24", "198.18.2.0/24", "fd00:1::/64"))
	if err != nil || added != 3 || removed != 0 {
		t.Fatalf("SyncRoutes = %d added, %d removed, %v; want 3, 0, nil", added, removed, err)
	}
	want := append([]string{"198.18.1.0/24 proto 83", "198.18.2.0/24 proto 83", "fd00:1::/64 proto 83"}, foreign...)
	slices.Sort(want)
	if diff := cmp.Diff(want, routeSet(t, link)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}

	// In sync: nothing to do.
	before := m.Counters()
	added, removed, err = m.SyncRoutes(name, cidrs(t, "fd00:1::/64", "198.18.2.0/24", "198.18.1.0/24"))
	if err != nil || added != 0 || removed != 0 || m.Counters() != before {
		t.Errorf("in-sync SyncRoutes = %d added, %d removed, %v, counters %+v -> %+v", added, removed, err, before, m.Counters())
	}

	// Drop two of ours, add one: the foreign routes stay.
	added, removed, err = m.SyncRoutes(name, cidrs(t, "198.18.2.0/24", "fd00:2::/64"))
	if err != nil || added != 1 || removed != 2 {
		t.Fatalf("SyncRoutes = %d added, %d removed, %v; want 1, 2, nil", added, removed, err)
	}
	want = append([]string{"198.18.2.0/24 proto 83", "fd00:2::/64 proto 83"}, foreign...)
	slices.Sort(want)
	if diff := cmp.Diff(want, routeSet(t, link)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	ours, err := m.OurRoutes(name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"198.18.2.0/24", "fd00:2::/64"}, ipNetStrings(ours)); diff != "" {
		t.Errorf("OurRoutes (-want +got):\n%s", diff)
	}

	// Wanting a destination someone else already routes is an error for that prefix
	// only; their route is not replaced.
	added, removed, err = m.SyncRoutes(name, cidrs(t, "198.18.2.0/24", "198.18.99.0/24", "198.18.3.0/24"))
	if err == nil || !strings.Contains(err.Error(), "198.18.99.0/24") {
		t.Errorf("SyncRoutes over a foreign route: err = %v, want one naming 198.18.99.0/24", err)
	}
	if added != 1 || removed != 1 {
		t.Errorf("SyncRoutes over a foreign route = %d added, %d removed; want 1, 1", added, removed)
	}
	want = append([]string{"198.18.2.0/24 proto 83", "198.18.3.0/24 proto 83"}, foreign...)
	slices.Sort(want)
	if diff := cmp.Diff(want, routeSet(t, link)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}

	// Nothing wanted: all ours go, the foreign ones stay.
	if _, removed, err = m.SyncRoutes(name, nil); err != nil || removed != 2 {
		t.Errorf("SyncRoutes(nil) removed %d, %v; want 2", removed, err)
	}
	if diff := cmp.Diff(foreign, routeSet(t, link)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}

	if _, _, err := m.SyncRoutes("wg-smp-absent", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("SyncRoutes on an absent device: err = %v, want ErrNotFound", err)
	}
}

func ipNetStrings(ns []net.IPNet) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.String())
	}
	return out
}

func TestDeleteRemovesDeviceAndRoutes(t *testing.T) {
	const name = "wg-smp-del"
	m := newDevice(t, name, 51860)
	if _, _, err := m.SyncRoutes(name, cidrs(t, "198.18.5.0/24", "fd00:5::/64")); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(name); err != nil {
		t.Fatal(err)
	}
	if linkExists(t, name) {
		t.Error("link still exists after Delete")
	}
	if _, err := os.Lstat(socketPath(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("UAPI socket after Delete: %v", err)
	}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := netlink.RouteListFiltered(family, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			t.Fatal(err)
		}
		if len(routes) != 0 {
			t.Errorf("routes with our protocol left after Delete: %v", routes)
		}
	}
	if got, _ := m.Devices("wg-smp-del"); len(got) != 0 {
		t.Errorf("Devices after Delete = %v", got)
	}
	// Deleting what is gone is fine; so is creating it again.
	if err := m.Delete(name); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := m.Ensure(name, genKey(t), 51860, 1420); err != nil {
		t.Errorf("Ensure after Delete: %v", err)
	}
}

// staleSocket leaves a socket file nobody listens on, as a killed process would.
func staleSocket(t *testing.T, name string) {
	t.Helper()
	if err := os.MkdirAll(socketDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socketPath(name), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(socketPath(name)); err != nil {
		t.Fatal(err)
	}
}

func TestStaleAndLostSockets(t *testing.T) {
	m := newUserspace(t)

	// A dead process's socket does not block creating the device again.
	const name = "wg-smp-stale"
	staleSocket(t, name)
	if _, err := m.Peers(name); !errors.Is(err, ErrNotFound) {
		t.Errorf("Peers with only a stale socket: err = %v, want ErrNotFound", err)
	}
	key := genKey(t)
	if err := m.Ensure(name, key, 51870, 1420); err != nil {
		t.Fatalf("Ensure over a stale socket: %v", err)
	}
	if dev, err := m.wg.Device(name); err != nil || dev.PrivateKey != key {
		t.Fatalf("device after Ensure over a stale socket: %v", err)
	}

	// Delete of an absent device clears its stale socket.
	staleSocket(t, "wg-smp-gone")
	if err := m.Delete("wg-smp-gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(socketPath("wg-smp-gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket after Delete: %v", err)
	}

	// A socket someone removed is served again by the next Ensure.
	if err := os.Remove(socketPath(name)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for m.userspace[name].serving() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := m.Peers(name); err == nil {
		t.Fatal("Peers works without a socket?")
	}
	if err := m.Ensure(name, key, 51870, 1420); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Peers(name); err != nil {
		t.Errorf("Peers after Ensure served the socket again: %v", err)
	}

	// A socket that answers but belongs to nobody we know (e.g. another namespace
	// sharing /var/run/wireguard) is not stolen.
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: socketPath("wg-smp-taken"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := m.Ensure("wg-smp-taken", key, 51871, 1420); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("Ensure with a live foreign socket: err = %v", err)
	}
	if linkExists(t, "wg-smp-taken") {
		t.Error("failed Ensure left its TUN link behind")
	}
}

func TestCloseLeavesUserspaceLinksAndRoutesForTheNextProcess(t *testing.T) {
	needSandbox(t)
	m, err := NewManager(ModeUserspace, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"wg-smp-close1", "wg-smp-close2"}
	keys := []wgtypes.Key{genKey(t), genKey(t)}
	routes := [][]net.IPNet{cidrs(t, "198.18.11.0/24"), cidrs(t, "198.18.12.0/24", "fd00:12::/64")}
	index := map[string]int{}
	for i, name := range names {
		if err := m.Ensure(name, keys[i], 51880+i, 1420); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.SyncRoutes(name, routes[i]); err != nil {
			t.Fatal(err)
		}
		index[name] = mustLink(t, name).Attrs().Index
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := m.Ensure("wg-smp-close3", genKey(t), 51883, 1420); err == nil {
		t.Error("Ensure after Close: no error")
	}
	for _, name := range names {
		if _, err := os.Lstat(socketPath(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s socket after Close: %v", name, err)
		}
		if l := mustLink(t, name); l.Attrs().Index != index[name] || l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s after Close: index %d, flags %v; want the same link (%d), up", name, l.Attrs().Index, l.Attrs().Flags, index[name])
		}
	}

	// The next process lists the links as its devices and takes them back: same links, its
	// own keys and ports set again, the routes untouched.
	next := newUserspace(t)
	if got, err := next.Devices("wg-smp-close"); err != nil || !slices.Equal(got, names) {
		t.Errorf("Devices of the next process = %v, %v; want %v", got, err, names)
	}
	for i, name := range names {
		if err := next.Ensure(name, keys[i], 51880+i, 1420); err != nil {
			t.Fatalf("Ensure taking %s back: %v", name, err)
		}
		if added, removed, err := next.SyncRoutes(name, routes[i]); err != nil || added+removed != 0 {
			t.Errorf("SyncRoutes after taking %s back: +%d -%d, %v; want the routes kept", name, added, removed, err)
		}
		if got := mustLink(t, name).Attrs().Index; got != index[name] {
			t.Errorf("%s taken back as link %d, want the same link %d", name, got, index[name])
		}
		if dev, err := next.wg.Device(name); err != nil || dev.PrivateKey != keys[i] || dev.ListenPort != 51880+i {
			t.Errorf("%s after being taken back: %v, %v", name, dev, err)
		}
	}
	if c := next.Counters(); c.LinkChanges != 0 || c.RouteChanges != 0 {
		t.Errorf("taking the devices back wrote links or routes: %+v", c)
	}

	// Delete removes a taken-back link; a link no process serves is ours to delete too.
	if err := next.Delete(names[0]); err != nil || linkExists(t, names[0]) {
		t.Errorf("Delete of a taken-back device: %v, link left: %v", err, linkExists(t, names[0]))
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	last := newUserspace(t)
	if err := last.Delete(names[1]); err != nil || linkExists(t, names[1]) {
		t.Errorf("Delete of a link no process serves: %v, link left: %v", err, linkExists(t, names[1]))
	}
}

// A TUN link by a device's name that is not marked as ours is somebody else's: it is neither
// taken over nor deleted.
func TestForeignTUNLinkIsNeitherTakenNorDeleted(t *testing.T) {
	m := newUserspace(t)
	const name = "wg-smp-foreign"
	tuntap := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TUN, Flags: netlink.TUNTAP_DEFAULTS}
	if err := netlink.LinkAdd(tuntap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(tuntap) })
	if err := m.Ensure(name, genKey(t), 51890, 1420); err == nil {
		t.Error("Ensure over a foreign TUN link: no error")
	}
	if err := m.Delete(name); err == nil || !linkExists(t, name) {
		t.Errorf("Delete of a foreign TUN link: err %v, link kept %v; want refused and kept", err, linkExists(t, name))
	}
	if got, _ := m.Devices(name); len(got) != 0 {
		t.Errorf("Devices lists a foreign TUN link: %v", got)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")

	key, created, err := LoadOrCreateKey(dir, "wg-smp-aws")
	if err != nil || !created {
		t.Fatalf("first LoadOrCreateKey: created %v, err %v", created, err)
	}
	path := filepath.Join(dir, "wg-smp-aws.key")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %04o, want 0700", di.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != key.String() {
		t.Error("key file does not hold the key in wg(8) base64 form")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("key dir holds %d entries, want 1 (no temporary files left)", len(entries))
	}

	again, created, err := LoadOrCreateKey(dir, "wg-smp-aws")
	if err != nil || created || again != key {
		t.Errorf("second LoadOrCreateKey: same key %v, created %v, err %v", again == key, created, err)
	}
	other, created, err := LoadOrCreateKey(dir, "wg-smp-gcp")
	if err != nil || !created || other == key {
		t.Errorf("another name: created %v, err %v, distinct %v", created, err, other != key)
	}

	// A file readable by others is refused, not regenerated.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir, "wg-smp-aws"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("0644 key file: err = %v, want one naming %s", err, path)
	}
	if b2, _ := os.ReadFile(path); string(b2) != string(b) {
		t.Error("0644 key file was rewritten")
	}

	// Garbage is refused, not regenerated, and the error does not echo it.
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadOrCreateKey(dir, "wg-smp-aws")
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "not a key") {
		t.Errorf("garbage key file: err = %v", err)
	}

	if _, _, err := LoadOrCreateKey(dir, "../escape"); err == nil {
		t.Error("key name with a slash: no error")
	}
}

// A node whose agent ran userspace WireGuard (no kernel support then) and now runs kernel
// WireGuard: the userspace link the previous process left is ours to replace. Where this
// kernel cannot create WireGuard links the creation fails after the old link went.
func TestKernelModeReplacesTheUserspaceLinkAPreviousProcessLeft(t *testing.T) {
	const name = "wg-smp-tokernel"
	before := newUserspace(t)
	if err := before.Ensure(name, genKey(t), 51895, 1420); err != nil {
		t.Fatal(err)
	}
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}
	wg, err := wgctrl.New()
	if err != nil {
		t.Fatal(err)
	}
	kernel := &Manager{mode: ModeKernel, log: testLogger(t), wg: wg, userspace: map[string]*userspaceDevice{}}
	t.Cleanup(func() { _ = kernel.Close() })
	err = kernel.Ensure(name, genKey(t), 51895, 1420)
	if probeKernel() != nil {
		if err == nil || !strings.Contains(err.Error(), "create wireguard link") || linkExists(t, name) {
			t.Errorf("Ensure without kernel WireGuard: err %v, link left %v; want the userspace link gone and the kernel link's creation failed", err, linkExists(t, name))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if l := mustLink(t, name); l.Type() != "wireguard" {
		t.Errorf("device after the switch is a %s link, want wireguard", l.Type())
	}
}

// Routes through a gateway: added, moved in place to another next hop, removed; routes without
// our marker, and our routes through a device, are left alone, and a destination someone else
// routes is an error for it.
func TestSyncGatewayRoutesOnlyTouchesOurs(t *testing.T) {
	const name = "wg-smp-gwroutes"
	m := newDevice(t, name, 51870)
	// The cluster's network: one end of a veth pair (this kernel has no dummy links).
	lan := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "smp-lan"}, PeerName: "smp-lan-peer"}
	if err := netlink.LinkAdd(lan); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(lan) })
	for _, a := range []string{"198.19.2.21/24", "fd00:19:2::21/64"} {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.AddrAdd(lan, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := netlink.LinkSetUp(lan); err != nil {
		t.Fatal(err)
	}
	foreign := cidr(t, "198.18.99.0/24")
	if err := netlink.RouteAdd(&netlink.Route{Dst: &foreign, Gw: net.ParseIP("198.19.2.99"), Protocol: unix.RTPROT_STATIC}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.SyncRoutes(name, cidrs(t, "198.18.50.0/24")); err != nil {
		t.Fatal(err)
	}
	lanLink, wg := mustLink(t, "smp-lan"), mustLink(t, name)
	gw := func(pairs ...string) map[netip.Prefix]netip.Addr {
		out := map[netip.Prefix]netip.Addr{}
		for i := 0; i < len(pairs); i += 2 {
			out[netip.MustParsePrefix(pairs[i])] = netip.MustParseAddr(pairs[i+1])
		}
		return out
	}
	routes := func() []string {
		t.Helper()
		list, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: lanLink.Attrs().Index}, netlink.RT_FILTER_OIF)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list {
			if r.Gw != nil {
				out = append(out, fmt.Sprintf("%s via %s proto %d", r.Dst, r.Gw, int(r.Protocol)))
			}
		}
		slices.Sort(out)
		return out
	}
	check := func(what string, want map[netip.Prefix]netip.Addr, wantAdded, wantReplaced, wantRemoved int, wantRoutes ...string) {
		t.Helper()
		added, replaced, removed, err := m.SyncGatewayRoutes(want, true)
		if err != nil || added != wantAdded || replaced != wantReplaced || removed != wantRemoved {
			t.Errorf("%s: SyncGatewayRoutes = %d added, %d replaced, %d removed, %v; want %d, %d, %d, nil",
				what, added, replaced, removed, err, wantAdded, wantReplaced, wantRemoved)
		}
		wantRoutes = append(wantRoutes, "198.18.99.0/24 via 198.19.2.99 proto 4")
		slices.Sort(wantRoutes)
		if diff := cmp.Diff(wantRoutes, routes()); diff != "" {
			t.Errorf("%s: routes through the network (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff([]string{"198.18.50.0/24 proto 83"}, routeSet(t, wg)); diff != "" {
			t.Errorf("%s: the device's routes changed (-want +got):\n%s", what, diff)
		}
	}
	check("added", gw("198.18.1.9/24", "198.19.2.22", "198.18.2.0/24", "198.19.2.22", "fd00:18:1::/64", "fd00:19:2::22"), 3, 0, 0,
		"198.18.1.0/24 via 198.19.2.22 proto 83", "198.18.2.0/24 via 198.19.2.22 proto 83", "fd00:18:1::/64 via fd00:19:2::22 proto 83")
	check("in sync", gw("198.18.1.0/24", "198.19.2.22", "198.18.2.0/24", "198.19.2.22", "fd00:18:1::/64", "fd00:19:2::22"), 0, 0, 0,
		"198.18.1.0/24 via 198.19.2.22 proto 83", "198.18.2.0/24 via 198.19.2.22 proto 83", "fd00:18:1::/64 via fd00:19:2::22 proto 83")
	check("another gateway", gw("198.18.1.0/24", "198.19.2.23", "198.18.2.0/24", "198.19.2.23", "fd00:18:1::/64", "fd00:19:2::23"), 0, 3, 0,
		"198.18.1.0/24 via 198.19.2.23 proto 83", "198.18.2.0/24 via 198.19.2.23 proto 83", "fd00:18:1::/64 via fd00:19:2::23 proto 83")
	check("one fewer", gw("198.18.1.0/24", "198.19.2.23", "fd00:18:1::/64", "fd00:19:2::23"), 0, 0, 1,
		"198.18.1.0/24 via 198.19.2.23 proto 83", "fd00:18:1::/64 via fd00:19:2::23 proto 83")
	// Without pruning (some of what is wanted is not known yet) the others stay.
	if added, replaced, removed, err := m.SyncGatewayRoutes(gw("198.18.1.0/24", "198.19.2.24"), false); err != nil || added != 0 || replaced != 1 || removed != 0 {
		t.Errorf("SyncGatewayRoutes without pruning = %d added, %d replaced, %d removed, %v; want 0, 1, 0, nil", added, replaced, removed, err)
	}
	check("pruned", gw("198.18.1.0/24", "198.19.2.23"), 0, 1, 1, "198.18.1.0/24 via 198.19.2.23 proto 83")

	added, _, removed, err := m.SyncGatewayRoutes(gw("198.18.1.0/24", "198.19.2.23", "198.18.99.0/24", "198.19.2.23", "198.18.3.0/24", "198.19.2.23"), true)
	if err == nil || !strings.Contains(err.Error(), "198.18.99.0/24") || added != 1 || removed != 0 {
		t.Errorf("SyncGatewayRoutes over a foreign route: %d added, %d removed, err = %v; want 1, 0 and an error naming 198.18.99.0/24", added, removed, err)
	}
	check("none", nil, 0, 0, 2)
}
