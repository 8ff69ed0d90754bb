package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// A userspace device's WireGuard state lives in the process that runs it. Its link outlives the
// process (userspaceAlias), and so does what the device learnt and no remote publishes: its
// peers' endpoints. A peer behind a NAT publishes none, and the device knows where it is only
// from its handshakes (roaming); without that endpoint the next process could not reach it,
// and the tunnel would wait for the peer to give up on its old session (15 s). Close writes
// each peer's public key and endpoint into the state directory; the next process, taking the
// link back, gives the device those peers, endpoints only, before anything else. Everything
// else (allowed IPs, keepalive, and the endpoint of a peer that publishes one) the agent sets
// afresh from what the remote publishes now: a restored peer has no allowed IP and no
// keepalive, so it starts no handshake, and its endpoint holds no live session that would be
// kept over a newly published one.

// peersSuffix ends the name of the file that hands a device's peers over: <dir>/<device>.peers.
const peersSuffix = ".peers"

// PeersFile is the file in dir that hands the peers of device name over to the next process.
func PeersFile(dir, name string) string { return filepath.Join(dir, name+peersSuffix) }

// savedPeer is one peer as the handover file keeps it: no key material but its public key.
type savedPeer struct {
	PublicKey string `json:"publicKey"`
	Endpoint  string `json:"endpoint"`
}

// SetStateDir makes dir (the key directory) the place where Close hands each userspace
// device's peers over to the next process, and where Delete removes them from. Without it
// nothing is handed over.
func (m *Manager) SetStateDir(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stateDir = dir
}

// savePeers writes the public key and endpoint of each peer of userspace device name that has
// an endpoint into its handover file. The caller holds m.mu and calls it before the device
// stops.
func (m *Manager) savePeers(name string) error {
	dev, err := m.wg.Device(name)
	if err != nil {
		return err
	}
	saved := make([]savedPeer, 0, len(dev.Peers))
	for _, p := range dev.Peers {
		if p.Endpoint != nil {
			saved = append(saved, savedPeer{PublicKey: p.PublicKey.String(), Endpoint: p.Endpoint.String()})
		}
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	// Written whole or not at all: a reader finds the old file or the new one.
	return renameio.WriteFile(PeersFile(m.stateDir, name), b, 0o600)
}

// restorePeers gives device name the peers the previous process handed over, endpoints only,
// and removes the file: it is read once, so a process that dies without handing over leaves
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
		if s.Endpoint == "" {
			continue // nothing learnt to hand over
		}
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

// config is the configuration that gives a device peer s: its endpoint, nothing else.
func (s savedPeer) config() (wgtypes.PeerConfig, error) {
	key, err := wgtypes.ParseKey(s.PublicKey)
	if err != nil {
		return wgtypes.PeerConfig{}, fmt.Errorf("peer %q: %w", s.PublicKey, err)
	}
	endpoint, err := netip.ParseAddrPort(s.Endpoint)
	if err != nil {
		return wgtypes.PeerConfig{}, fmt.Errorf("peer %s: endpoint: %w", s.PublicKey, err)
	}
	return wgtypes.PeerConfig{PublicKey: key, Endpoint: net.UDPAddrFromAddrPort(endpoint)}, nil
}
