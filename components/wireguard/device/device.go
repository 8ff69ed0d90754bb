package device

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Mode selects the WireGuard implementation.
type Mode string

const (
	// ModeAuto uses kernel WireGuard when the kernel can create wireguard links, and
	// the embedded userspace implementation otherwise.
	ModeAuto Mode = "auto"
	// ModeKernel requires kernel WireGuard.
	ModeKernel Mode = "kernel"
	// ModeUserspace runs wireguard-go inside this process.
	ModeUserspace Mode = "userspace"
)

// parseMode returns the Mode named by s, or an error listing the valid modes.
func parseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeKernel, ModeUserspace:
		return m, nil
	}
	return "", fmt.Errorf("invalid WireGuard mode %q: want %s, %s or %s", s, ModeAuto, ModeKernel, ModeUserspace)
}

// ErrNotFound is returned (wrapped) when the named WireGuard device does not exist.
var ErrNotFound = errors.New("wireguard device not found")

// maxNameLen is Linux's IFNAMSIZ minus the terminating NUL.
const maxNameLen = 15

// tunPath is the TUN clone device userspace WireGuard needs.
const tunPath = "/dev/net/tun"

// Host is everything a Manager does to this host's devices. *Manager implements it;
// devicetest.Devices is its in-memory stand-in for tests.
type Host interface {
	Ensure(name string, key wgtypes.Key, listenPort, mtu int) error
	Peers(name string) ([]wgtypes.Peer, error)
	ConfigurePeers(name string, changes []wgtypes.PeerConfig) error
	PeerStats(name string) ([]wgtypes.Peer, error)
	SyncRoutes(name string, want []net.IPNet) (added, removed int, err error)
	SyncGatewayRoutes(want map[netip.Prefix]netip.Addr, prune bool) (added, replaced, removed int, err error)
	Delete(name string) error
	Devices(prefix string) ([]string, error)
	MTU(name string) (int, error)
	SetMTU(name string, mtu int) error
	PathMTU(dst netip.Addr) (int, error)
	DefaultPathMTU(local netip.Addr) (int, error)
	Implementation() string
}

var _ Host = (*Manager)(nil)

// wgClient is the part of *wgctrl.Client the Manager uses.
type wgClient interface {
	Device(name string) (*wgtypes.Device, error)
	ConfigureDevice(name string, cfg wgtypes.Config) error
	Close() error
}

// Counters are cumulative counts of the writes a Manager made to the host. They feed
// metrics and let tests prove that an in-sync device was left alone.
type Counters struct {
	// DeviceConfigs counts wgctrl ConfigureDevice calls (key, port and peer changes).
	DeviceConfigs uint64
	// LinkChanges counts link writes: create, delete, MTU and up.
	LinkChanges uint64
	// RouteChanges counts routes added or removed.
	RouteChanges uint64
}

// Manager creates and configures WireGuard devices and their routes on this host.
// Its methods are safe for concurrent use.
type Manager struct {
	mode Mode
	log  *slog.Logger
	wg   wgClient

	// mu serialises device lifecycle changes (Ensure, Delete, Close) and guards
	// userspace.
	mu        sync.Mutex
	userspace map[string]*userspaceDevice
	closed    bool
	// stateDir is where userspace devices' peers are handed over to the next process.
	stateDir string

	deviceConfigs atomic.Uint64
	linkChanges   atomic.Uint64
	routeChanges  atomic.Uint64
}

// NewManager returns a Manager for mode. ModeAuto resolves to kernel or userspace here,
// once, by creating (and deleting) a throwaway wireguard link; ModeKernel fails when the
// kernel cannot create one, ModeUserspace when there is no TUN device. A nil log
// discards log output.
func NewManager(mode Mode, log *slog.Logger) (*Manager, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := parseMode(string(mode)); err != nil {
		return nil, err
	}

	resolved := mode
	switch mode {
	case ModeAuto, ModeKernel:
		if err := probeKernel(); err != nil {
			if mode == ModeKernel {
				return nil, fmt.Errorf("kernel WireGuard is not available (is the wireguard module loaded?): %w", err)
			}
			log.Info("kernel WireGuard not available, using userspace WireGuard", "err", err)
			resolved = ModeUserspace
		} else {
			resolved = ModeKernel
		}
	}
	if resolved == ModeUserspace {
		if _, err := os.Stat(tunPath); err != nil {
			return nil, fmt.Errorf("userspace WireGuard needs %s: %w", tunPath, err)
		}
	}

	wg, err := wgctrl.New()
	if err != nil {
		return nil, fmt.Errorf("open WireGuard control client: %w", err)
	}
	log.Info("WireGuard manager started", "mode", string(resolved))
	return &Manager{
		mode:      resolved,
		log:       log,
		wg:        wg,
		userspace: map[string]*userspaceDevice{},
	}, nil
}

// probeKernel reports whether the kernel can create a wireguard link by creating one
// under a random name and deleting it again. Creating a link is the only reliable test:
// the module may be present but not yet loaded (link creation autoloads it).
func probeKernel() error {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	name := "smp-probe" + hex.EncodeToString(b[:]) // 15 bytes
	link := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(link); err != nil {
		return fmt.Errorf("create wireguard link: %w", err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete probe link %s: %w", name, err)
	}
	return nil
}

// resolvedMode returns the implementation this Manager uses: ModeKernel or ModeUserspace.
func (m *Manager) resolvedMode() Mode { return m.mode }

// Counters returns the writes made so far.
func (m *Manager) Counters() Counters {
	return Counters{
		DeviceConfigs: m.deviceConfigs.Load(),
		LinkChanges:   m.linkChanges.Load(),
		RouteChanges:  m.routeChanges.Load(),
	}
}

// validName reports whether name can be a Linux interface name.
func validName(name string) error {
	if name == "" || len(name) > maxNameLen || name == "." || name == ".." ||
		strings.ContainsAny(name, "/:% \t\n") {
		return fmt.Errorf("invalid device name %q: want 1-%d bytes without '/', ':', '%%' or spaces", name, maxNameLen)
	}
	return nil
}

// Ensure makes device name exist with private key, listen port and MTU, and be up. It
// creates the device when absent and otherwise changes only what differs: an in-sync
// device gets no write at all, so its sessions are undisturbed. listenPort 0 means "any
// port" (chosen at creation, not enforced afterwards).
func (m *Manager) Ensure(name string, key wgtypes.Key, listenPort, mtu int) error {
	if err := checkSettings(name, listenPort, mtu); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("manager is closed")
	}
	link, tookBack, err := m.ensureLink(name, mtu)
	if err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	if err := m.configure(link, key, listenPort); err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	if err := m.raise(link, mtu); err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	if tookBack && m.stateDir != "" {
		// Before the caller configures peers: the handed-over endpoints are the only way to
		// peers behind a NAT, and the caller keeps an endpoint a peer does not publish.
		n, err := m.restorePeers(name)
		if err != nil {
			m.log.Warn("restoring the peers the previous process handed over failed; peers behind a NAT are reached at their next handshake", "device", name, "err", err)
		} else if n > 0 {
			m.log.Info("peers handed over by the previous process restored", "device", name, "peers", n)
		}
	}
	return nil
}

// checkSettings validates Ensure's arguments before anything is touched.
func checkSettings(name string, listenPort, mtu int) error {
	if err := validName(name); err != nil {
		return err
	}
	if listenPort < 0 || listenPort > 65535 {
		return fmt.Errorf("device %s: invalid listen port %d", name, listenPort)
	}
	if err := checkMTU(mtu); err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	return nil
}

// lookup returns the link called name (nil when there is none) and the userspace device
// this Manager runs for it. A userspace device whose link went away behind our back
// (deleted by hand) is useless: it is closed, forgotten and not returned. The caller holds
// m.mu.
func (m *Manager) lookup(name string) (netlink.Link, *userspaceDevice, error) {
	link, err := linkByName(name)
	if err != nil {
		return nil, nil, err
	}
	ud := m.userspace[name]
	if link == nil && ud != nil {
		ud.close()
		delete(m.userspace, name)
		return nil, nil, nil
	}
	return link, ud, nil
}

// ensureLink returns the link of device name, creating the device when absent, taking back
// the link of ours a previous process left (tookBack), and serving the UAPI socket of our
// userspace device again when it was removed. The caller holds m.mu.
func (m *Manager) ensureLink(name string, mtu int) (link netlink.Link, tookBack bool, err error) {
	hadUserspace := m.userspace[name] != nil
	link, ud, err := m.lookup(name)
	if err != nil {
		return nil, false, err
	}
	if link == nil {
		if hadUserspace {
			m.log.Warn("userspace WireGuard link disappeared, recreating", "device", name)
		}
		m.forgetPeers(name) // handed over to a link that is gone (a reboot): stale
		link, err = m.create(name, mtu)
		return link, false, err
	}
	if ud == nil && ownedUserspaceLink(link) && !m.isWireGuard(link) {
		// Ours, and no process serves it (one that does answers on its socket and is
		// configured through it).
		if m.mode == ModeUserspace {
			link, err = m.takeBack(link, mtu)
			return link, err == nil, err
		}
		link, err = m.replaceWithKernel(link, mtu)
		return link, false, err
	}
	if ud != nil && !ud.serving() {
		// Our UAPI socket was removed (its accept loop ended): serve it again, or the
		// device could no longer be configured.
		m.log.Warn("UAPI socket of userspace WireGuard device gone, serving it again", "device", name)
		if err := ud.serve(); err != nil {
			return nil, false, err
		}
	}
	return link, false, nil
}

// configure sets the private key and, unless listenPort is 0, the listen port of the
// device on link, in one write and only when either differs.
func (m *Manager) configure(link netlink.Link, key wgtypes.Key, listenPort int) error {
	name := link.Attrs().Name
	dev, err := m.wg.Device(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("link exists but is not a WireGuard device this host can configure (type %s)", link.Type())
		}
		return fmt.Errorf("read WireGuard configuration: %w", err)
	}
	var cfg wgtypes.Config
	var changed []string
	if dev.PrivateKey != key {
		cfg.PrivateKey = &key
		changed = append(changed, "private key")
	}
	if listenPort != 0 && dev.ListenPort != listenPort {
		cfg.ListenPort = &listenPort
		changed = append(changed, "listen port")
	}
	if len(changed) == 0 {
		return nil
	}
	m.deviceConfigs.Add(1)
	if err := m.wg.ConfigureDevice(name, cfg); err != nil {
		return fmt.Errorf("set %s: %w", strings.Join(changed, " and "), err)
	}
	m.log.Info("WireGuard device configured", "device", name, "changed", strings.Join(changed, ","), "listen_port", listenPort)
	return nil
}

// raise sets the MTU of link and brings it up, each only when needed. The caller holds
// m.mu.
func (m *Manager) raise(link netlink.Link, mtu int) error {
	name := link.Attrs().Name
	if err := m.setMTU(link, mtu); err != nil {
		return err
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		m.linkChanges.Add(1)
		if err := netlink.LinkSetUp(link); err != nil {
			return fmt.Errorf("set link up: %w", err)
		}
		m.log.Info("WireGuard device up", "device", name)
	}
	if ud := m.userspace[name]; ud != nil {
		// wireguard-go follows the link state by itself, but swallows the error when
		// binding its UDP port fails; bring it up here to surface that error.
		if err := ud.dev.Up(); err != nil {
			return fmt.Errorf("bring userspace WireGuard up: %w", err)
		}
	}
	return nil
}

// create adds the link for a new device; the caller configures and raises it.
func (m *Manager) create(name string, mtu int) (netlink.Link, error) {
	m.linkChanges.Add(1)
	switch m.mode {
	case ModeKernel:
		link := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}}
		if err := netlink.LinkAdd(link); err != nil {
			return nil, fmt.Errorf("create wireguard link: %w", err)
		}
	default:
		if err := m.createUserspace(name, mtu); err != nil {
			return nil, err
		}
	}
	m.log.Info("WireGuard device created", "device", name, "mode", string(m.mode))
	link, err := linkByName(name)
	if err == nil && link == nil {
		err = errors.New("link vanished right after creation")
	}
	return link, err
}

// createUserspace makes a userspace device with a new persistent link, marked as ours. A
// failure leaves no link behind. The caller holds m.mu.
func (m *Manager) createUserspace(name string, mtu int) error {
	ud, err := startUserspace(name, mtu, m.log.With("device", name))
	if err == nil {
		var link netlink.Link
		if link, err = linkByName(name); err == nil && link != nil {
			err = netlink.LinkSetAlias(link, userspaceAlias)
		}
		if err != nil {
			ud.close()
			err = fmt.Errorf("mark TUN device as ours: %w", err)
		}
	}
	if err != nil {
		// The link is persistent: it goes only when deleted.
		if link, lerr := linkByName(name); lerr == nil && link != nil {
			_ = netlink.LinkDel(link)
		}
		return err
	}
	m.userspace[name] = ud
	return nil
}

// takeBack runs a userspace device on link, the persistent link of a device of ours that no
// process serves (this controller's previous process, before a restart). The link keeps its
// index, state, addresses and routes: only its WireGuard configuration (key, port, peers) is
// new, which the caller sets. The caller holds m.mu.
func (m *Manager) takeBack(link netlink.Link, mtu int) (netlink.Link, error) {
	name := link.Attrs().Name
	ud, err := startUserspace(name, mtu, m.log.With("device", name))
	if err != nil {
		return nil, fmt.Errorf("take back the persistent link of a previous process: %w", err)
	}
	m.userspace[name] = ud
	m.log.Info("userspace WireGuard device taken back from a previous process, its routes kept", "device", name)
	return linkByName(name)
}

// replaceWithKernel deletes link, the userspace device's link a previous process left (which
// ran userspace WireGuard: the kernel could not then), and creates a kernel device by its name.
// Its routes go with the old link; the caller's SyncRoutes puts them back. The caller holds
// m.mu.
func (m *Manager) replaceWithKernel(link netlink.Link, mtu int) (netlink.Link, error) {
	name := link.Attrs().Name
	m.linkChanges.Add(1)
	if err := netlink.LinkDel(link); err != nil {
		return nil, fmt.Errorf("delete the userspace link a previous process left: %w", err)
	}
	m.forgetPeers(name)
	m.log.Info("kernel WireGuard now: the userspace device a previous process left is replaced", "device", name)
	return m.create(name, mtu)
}

// Peers returns the device's current peers.
func (m *Manager) Peers(name string) ([]wgtypes.Peer, error) {
	dev, err := m.device(name)
	if err != nil {
		return nil, err
	}
	return dev.Peers, nil
}

// PeerStats returns the device's peers with their last handshake time and byte
// counters. It is the same read as Peers, named for what the metrics code wants.
func (m *Manager) PeerStats(name string) ([]wgtypes.Peer, error) {
	return m.Peers(name)
}

// device reads the device through wgctrl, translating "absent" into ErrNotFound.
func (m *Manager) device(name string) (*wgtypes.Device, error) {
	dev, err := m.wg.Device(name)
	if err == nil {
		return dev, nil
	}
	return nil, m.explain(name, err)
}

// explain turns a wgctrl error into one that says whether the device exists. A
// userspace device whose process is gone leaves its socket behind, which wgctrl reports
// as a failed dial rather than as absence.
func (m *Manager) explain(name string, err error) error {
	link, lerr := linkByName(name)
	if lerr == nil && link == nil {
		return fmt.Errorf("device %s: %w", name, ErrNotFound)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("device %s: link exists but its WireGuard configuration is unreachable (userspace socket missing?): %w", name, err)
	}
	return fmt.Errorf("device %s: %w", name, err)
}

// ConfigurePeers applies changes (adds, updates with UpdateOnly or not, removals with
// Remove) in one call, never replacing the peer list: peers not mentioned keep their
// sessions. No changes means no call at all.
func (m *Manager) ConfigurePeers(name string, changes []wgtypes.PeerConfig) error {
	if len(changes) == 0 {
		return nil
	}
	m.deviceConfigs.Add(1)
	if err := m.wg.ConfigureDevice(name, wgtypes.Config{ReplacePeers: false, Peers: changes}); err != nil {
		return m.explain(name, fmt.Errorf("configure %d peer(s): %w", len(changes), err))
	}
	for _, c := range changes {
		switch {
		case c.Remove:
			m.log.Info("WireGuard peer removed", "device", name, "peer", c.PublicKey.String())
		default:
			m.log.Info("WireGuard peer configured", "device", name, "peer", c.PublicKey.String())
		}
	}
	return nil
}

// Delete removes device name and its routes. An absent device is not an error (a stale
// userspace socket left for it is cleaned up). A link by that name that is not a
// WireGuard device is refused, never deleted.
func (m *Manager) Delete(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	link, ud, err := m.lookup(name)
	if err != nil {
		return fmt.Errorf("device %s: %w", name, err)
	}
	if link == nil {
		removeStaleSocket(name, m.log)
		m.forgetPeers(name)
		return nil
	}
	if ud == nil && !m.isWireGuard(link) && !ownedUserspaceLink(link) {
		return fmt.Errorf("device %s: link of type %s is not a WireGuard device, not deleting it", name, link.Type())
	}

	// Routes through a deleted link vanish with it, but deleting ours first keeps the
	// route counters honest and leaves nothing behind if the link delete fails.
	if _, removed, err := m.syncRoutes(link, nil); err != nil {
		m.log.Warn("removing routes of deleted device failed", "device", name, "removed", removed, "err", err)
	}

	m.linkChanges.Add(1)
	if ud != nil {
		// Closing the listener removes the socket; the link is persistent and goes below.
		ud.close()
		delete(m.userspace, name)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("device %s: delete link: %w", name, err)
	}
	m.forgetPeers(name)
	m.log.Info("WireGuard device deleted", "device", name)
	return nil
}

// isWireGuard reports whether link is a WireGuard device: a kernel wireguard link, or
// a TUN link whose userspace implementation answers on its UAPI socket.
func (m *Manager) isWireGuard(link netlink.Link) bool {
	if link.Type() == "wireguard" {
		return true
	}
	if link.Type() != "tuntap" {
		return false
	}
	_, err := m.wg.Device(link.Attrs().Name)
	return err == nil
}

// Devices returns, sorted, the names of the WireGuard devices (kernel or userspace, with the
// links of ours no process serves yet) whose name starts with prefix. Links of other types
// are ignored even when they match.
func (m *Manager) Devices(prefix string) ([]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, l := range links {
		name := l.Attrs().Name
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if m.userspace[name] != nil || ownedUserspaceLink(l) || m.isWireGuard(l) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Close stops the userspace devices this Manager runs (their sockets go with them; their
// peers are handed over in the state directory, see SetStateDir) and releases the control
// client. Links are left in place on purpose, with their routes: a
// kernel device keeps carrying traffic while the controller restarts, a userspace device's
// persistent link holds the traffic back (dropped, so TCP retransmits) until the next process
// takes it back. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for name, ud := range m.userspace {
		if m.stateDir != "" {
			if err := m.savePeers(name); err != nil {
				m.log.Warn("handing the peers over to the next process failed; peers behind a NAT will be reached at their next handshake", "device", name, "err", err)
			}
		}
		ud.close()
		delete(m.userspace, name)
		m.log.Info("userspace WireGuard device stopped", "device", name)
	}
	return m.wg.Close()
}

// linkByName returns the link called name, or nil when there is none.
func linkByName(name string) (netlink.Link, error) {
	link, err := netlink.LinkByName(name)
	if err == nil {
		return link, nil
	}
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) || errors.Is(err, unix.ENODEV) {
		return nil, nil
	}
	return nil, fmt.Errorf("look up link: %w", err)
}
