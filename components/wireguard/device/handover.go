package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// A userspace device's WireGuard state lives in the process that runs it. Its link outlives the
// process (userspaceAlias), and so do its peers: Close writes them into the state directory,
// and the next process, taking the link back, configures them again before anything else.
// What matters is the endpoints: a peer behind a NAT publishes none, and the device knows
// where it is only from its handshakes (roaming); without its endpoint the new process could
// not reach it, and the tunnel would wait for the peer to give up on its old session (15 s).

// peersSuffix ends the name of the file that hands a device's peers over: <dir>/<device>.peers.
const peersSuffix = ".peers"

// PeersFile is the file in dir that hands the peers of device name over to the next process.
func PeersFile(dir, name string) string { return filepath.Join(dir, name+peersSuffix) }

// savedPeer is one peer as the handover file keeps it: no key material but public keys.
type savedPeer struct {
	PublicKey  string        `json:"publicKey"`
	Endpoint   string        `json:"endpoint,omitempty"`
	AllowedIPs []string      `json:"allowedIPs,omitempty"`
	Keepalive  time.Duration `json:"keepalive,omitempty"`
}

// SetStateDir makes dir (the key directory) the place where Close hands each userspace
// device's peers over to the next process, and where Delete removes them from. Without it
// nothing is handed over.
func (m *Manager) SetStateDir(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stateDir = dir
}

// savePeers writes the peers of userspace device name into its handover file. The caller
// holds m.mu and calls it before the device stops.
func (m *Manager) savePeers(name string) error {
	dev, err := m.wg.Device(name)
	if err != nil {
		return err
	}
	saved := make([]savedPeer, 0, len(dev.Peers))
	for _, p := range dev.Peers {
		s := savedPeer{PublicKey: p.PublicKey.String(), Keepalive: p.PersistentKeepaliveInterval}
		if p.Endpoint != nil {
			s.Endpoint = p.Endpoint.String()
		}
		for _, a := range p.AllowedIPs {
			s.AllowedIPs = append(s.AllowedIPs, a.String())
		}
		saved = append(saved, s)
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return writeFileAtomic(PeersFile(m.stateDir, name), b)
}

// restorePeers configures the peers the previous process handed over for device name, and
// removes the file: it is read once, so a process that dies without handing over leaves
// nothing stale behind. No file means nothing to restore.
func (m *Manager) restorePeers(name string) (int, error) {
	path := PeersFile(m.stateDir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	_ = os.Remove(path)
	var saved []savedPeer
	if err := json.Unmarshal(b, &saved); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	peers := make([]wgtypes.PeerConfig, 0, len(saved))
	for _, s := range saved {
		p, err := s.config()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		peers = append(peers, p)
	}
	m.deviceConfigs.Add(1)
	return len(peers), m.wg.ConfigureDevice(name, wgtypes.Config{ReplacePeers: true, Peers: peers})
}

// forgetPeers removes the peers handed over for device name, if any.
func (m *Manager) forgetPeers(name string) {
	if m.stateDir == "" {
		return
	}
	if err := os.Remove(PeersFile(m.stateDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("removing the peers handed over for the device failed", "device", name, "err", err)
	}
}

// config is the configuration that gives a device peer s.
func (s savedPeer) config() (wgtypes.PeerConfig, error) {
	key, err := wgtypes.ParseKey(s.PublicKey)
	if err != nil {
		return wgtypes.PeerConfig{}, fmt.Errorf("peer %q: %w", s.PublicKey, err)
	}
	p := wgtypes.PeerConfig{PublicKey: key, ReplaceAllowedIPs: true, PersistentKeepaliveInterval: &s.Keepalive}
	if s.Endpoint != "" {
		if p.Endpoint, err = net.ResolveUDPAddr("udp", s.Endpoint); err != nil {
			return p, fmt.Errorf("peer %s: endpoint: %w", s.PublicKey, err)
		}
	}
	for _, a := range s.AllowedIPs {
		_, n, err := net.ParseCIDR(a)
		if err != nil {
			return p, fmt.Errorf("peer %s: allowed IP: %w", s.PublicKey, err)
		}
		p.AllowedIPs = append(p.AllowedIPs, *n)
	}
	return p, nil
}

// writeFileAtomic replaces path with a file (mode 0600) holding b: a temporary file written,
// synced and renamed into place, so a reader finds the old file or the whole new one.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*") // created 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
