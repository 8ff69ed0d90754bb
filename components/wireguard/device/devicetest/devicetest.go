// Package devicetest provides an in-memory stand-in for a host's WireGuard devices, as
// net/http/httptest does for servers: tests of code that drives a [device.Host] (the
// wireguard controller, the chart's identity tests) use [Devices] where the real
// [device.Manager] would need root, network namespaces and a TUN device. The data path with
// real devices is tested in package device itself.
package devicetest

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
)

var _ device.Host = (*Devices)(nil)

// Devices are in-memory WireGuard devices. Peer changes follow wgctrl's semantics (what a
// change leaves unset stays as it was, UpdateOnly never adds, Remove removes); every call on
// a device that was not ensured fails with [device.ErrNotFound], as the Manager's do. It
// counts the writes it is asked for, so that tests can prove an in-sync device was left
// alone. Its methods are safe for concurrent use.
type Devices struct {
	mu      sync.Mutex
	devices map[string]*fakeDevice
	counts  Counts
	// paths are the MTUs of the underlay routes SetPathMTU set, by destination.
	paths map[netip.Prefix]int
	// gatewayRoutes are the next hops of the routes through a gateway, by destination.
	gatewayRoutes map[netip.Prefix]netip.Addr
}

type fakeDevice struct {
	peers  map[wgtypes.Key]wgtypes.Peer
	routes []string // sorted
	mtu    int
}

// DefaultPathMTU is the MTU of every underlay route SetPathMTU did not set: Ethernet's.
const DefaultPathMTU = 1500

// Counts are the writes a Devices was asked for.
type Counts struct {
	// Configs counts ConfigurePeers calls that changed something.
	Configs int
	// PeerChanges counts single peer changes: adds, updates and removals.
	PeerChanges int
}

// New returns a host without devices.
func New() *Devices {
	return &Devices{devices: map[string]*fakeDevice{}}
}

// Key returns a new private key, failing t if none can be generated.
func Key(t testing.TB) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Ensure creates device name when absent and sets its MTU; peers and routes of an existing
// device are left as they are.
func (d *Devices) Ensure(name string, _ wgtypes.Key, _, mtu int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.devices[name] == nil {
		d.devices[name] = &fakeDevice{peers: map[wgtypes.Key]wgtypes.Peer{}}
	}
	d.devices[name].mtu = mtu
	return nil
}

// MTU returns the MTU of device name.
func (d *Devices) MTU(name string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.device(name)
	if err != nil {
		return 0, err
	}
	return dev.mtu, nil
}

// SetMTU sets the MTU of device name.
func (d *Devices) SetMTU(name string, mtu int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.device(name)
	if err != nil {
		return err
	}
	dev.mtu = mtu
	return nil
}

// SetPathMTU makes the underlay route toward the addresses of dst carry mtu bytes (the longest
// prefix set wins); 0 removes it.
func (d *Devices) SetPathMTU(dst netip.Prefix, mtu int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paths == nil {
		d.paths = map[netip.Prefix]int{}
	}
	if mtu == 0 {
		delete(d.paths, dst)
		return
	}
	d.paths[dst] = mtu
}

// PathMTU is the MTU SetPathMTU set for the longest prefix holding dst, else DefaultPathMTU.
func (d *Devices) PathMTU(dst netip.Addr) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	mtu, bits := DefaultPathMTU, -1
	for p, m := range d.paths {
		if p.Contains(dst) && p.Bits() > bits {
			mtu, bits = m, p.Bits()
		}
	}
	return mtu, nil
}

// DefaultPathMTU is PathMTU of the unspecified address of local's family: SetPathMTU of
// 0.0.0.0/0 or ::/0 sets it.
func (d *Devices) DefaultPathMTU(local netip.Addr) (int, error) {
	if local.Is6() && !local.Is4In6() {
		return d.PathMTU(netip.IPv6Unspecified())
	}
	return d.PathMTU(netip.IPv4Unspecified())
}

// Implementation is "userspace": the devices are in memory.
func (d *Devices) Implementation() string { return "userspace" }

// device returns the device called name; the caller holds d.mu.
func (d *Devices) device(name string) (*fakeDevice, error) {
	dev := d.devices[name]
	if dev == nil {
		return nil, fmt.Errorf("device %s: %w", name, device.ErrNotFound)
	}
	return dev, nil
}

// Peers returns the peers of device name, ordered by public key.
func (d *Devices) Peers(name string) ([]wgtypes.Peer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.device(name)
	if err != nil {
		return nil, err
	}
	out := make([]wgtypes.Peer, 0, len(dev.peers))
	for _, p := range dev.peers {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b wgtypes.Peer) int { return strings.Compare(a.PublicKey.String(), b.PublicKey.String()) })
	return out, nil
}

// PeerStats is Peers, as on the Manager.
func (d *Devices) PeerStats(name string) ([]wgtypes.Peer, error) { return d.Peers(name) }

// ConfigurePeers applies changes to the peers of device name; no changes is no write.
func (d *Devices) ConfigurePeers(name string, changes []wgtypes.PeerConfig) error {
	if len(changes) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.device(name)
	if err != nil {
		return err
	}
	d.counts.Configs++
	for _, c := range changes {
		d.counts.PeerChanges++
		p, exists := dev.peers[c.PublicKey]
		switch {
		case c.Remove:
			delete(dev.peers, c.PublicKey)
		case exists || !c.UpdateOnly:
			dev.peers[c.PublicKey] = configured(p, c)
		}
	}
	return nil
}

// configured is peer p after change c, as wgctrl applies it: what c leaves unset stays.
func configured(p wgtypes.Peer, c wgtypes.PeerConfig) wgtypes.Peer {
	p.PublicKey = c.PublicKey
	if c.Endpoint != nil {
		p.Endpoint = c.Endpoint
	}
	if c.PresharedKey != nil {
		p.PresharedKey = *c.PresharedKey
	}
	if c.PersistentKeepaliveInterval != nil {
		p.PersistentKeepaliveInterval = *c.PersistentKeepaliveInterval
	}
	if c.ReplaceAllowedIPs {
		p.AllowedIPs = nil
	}
	p.AllowedIPs = append(slices.Clone(p.AllowedIPs), c.AllowedIPs...)
	return p
}

// SyncRoutes makes the routes via device name exactly want and reports how many it added and
// removed.
func (d *Devices) SyncRoutes(name string, want []net.IPNet) (added, removed int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.device(name)
	if err != nil {
		return 0, 0, err
	}
	routes := make([]string, 0, len(want))
	for _, n := range want {
		routes = append(routes, n.String())
	}
	slices.Sort(routes)
	for _, r := range routes {
		if !slices.Contains(dev.routes, r) {
			added++
		}
	}
	for _, r := range dev.routes {
		if !slices.Contains(routes, r) {
			removed++
		}
	}
	dev.routes = routes
	return added, removed, nil
}

// SyncGatewayRoutes makes the routes through a gateway be want (with prune, exactly want).
func (d *Devices) SyncGatewayRoutes(want map[netip.Prefix]netip.Addr, prune bool) (added, replaced, removed int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gatewayRoutes == nil {
		d.gatewayRoutes = map[netip.Prefix]netip.Addr{}
	}
	for dst, gw := range d.gatewayRoutes {
		if _, wanted := want[dst]; !wanted && prune {
			delete(d.gatewayRoutes, dst)
			removed++
		} else if wanted && want[dst] != gw {
			d.gatewayRoutes[dst] = want[dst]
			replaced++
		}
	}
	for dst, gw := range want {
		if _, ok := d.gatewayRoutes[dst]; !ok {
			d.gatewayRoutes[dst] = gw
			added++
		}
	}
	return added, replaced, removed, nil
}

// GatewayRoutes returns the routes through a gateway, "<destination> via <next hop>", sorted.
func (d *Devices) GatewayRoutes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []string{}
	for dst, gw := range d.gatewayRoutes {
		out = append(out, dst.String()+" via "+gw.String())
	}
	slices.Sort(out)
	return out
}

// Delete removes device name with its peers and routes; an absent device is no error.
func (d *Devices) Delete(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.devices, name)
	return nil
}

// Devices returns the names of the devices that start with prefix, sorted.
func (d *Devices) Devices(prefix string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for name := range d.devices {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Roam moves the endpoint of peer on device name to endpoint ("192.0.2.7:40001") with a
// handshake now, as WireGuard does when the peer's authenticated packets start coming from
// elsewhere (a NAT, a node that cannot be reached at what it publishes).
func (d *Devices) Roam(name string, peer wgtypes.Key, endpoint string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.devices[name].peers[peer]
	p.Endpoint = net.UDPAddrFromAddrPort(netip.MustParseAddrPort(endpoint))
	p.LastHandshakeTime = time.Now()
	d.devices[name].peers[peer] = p
}

// Handshake sets the time of the last handshake with peer on device name; the zero time is
// none yet.
func (d *Devices) Handshake(name string, peer wgtypes.Key, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.devices[name].peers[peer]
	p.LastHandshakeTime = at
	d.devices[name].peers[peer] = p
}

// Endpoints returns the endpoint of each peer of device name by public key (both as
// strings, for messages); nil when there is no such device.
func (d *Devices) Endpoints(name string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev := d.devices[name]
	if dev == nil {
		return nil
	}
	out := make(map[string]string, len(dev.peers))
	for k, p := range dev.peers {
		out[k.String()] = p.Endpoint.String() // "<nil>" for none
	}
	return out
}

// AllowedIPs returns the allowed IPs of each peer of device name by public key, sorted (all
// as strings, for messages); nil when there is no such device.
func (d *Devices) AllowedIPs(name string) map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev := d.devices[name]
	if dev == nil {
		return nil
	}
	out := make(map[string][]string, len(dev.peers))
	for k, p := range dev.peers {
		ips := []string{}
		for _, n := range p.AllowedIPs {
			ips = append(ips, n.String())
		}
		slices.Sort(ips)
		out[k.String()] = ips
	}
	return out
}

// Routes returns the destinations routed via device name, sorted.
func (d *Devices) Routes(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dev := d.devices[name]; dev != nil {
		return slices.Clone(dev.routes)
	}
	return nil
}

// Counts returns the writes made so far.
func (d *Devices) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}
