package controller

import (
	"slices"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// handshakeGrace is how long a peer may go without a handshake before it counts as without
// one: the first handshake of a new peer, and a new one after its session ended, may take a
// few keepalive intervals (every peer's handshake is retried every 5 seconds).
func (c *Peering) handshakeGrace() time.Duration {
	return max(2*time.Minute, 4*c.opts.Keepalive)
}

// withoutHandshake reports whether peer p, configured since since, has gone without a
// handshake at now: none at all, or none within a session's lifetime, once grace has passed
// since it was configured.
func withoutHandshake(p wgtypes.Peer, since, now time.Time, grace time.Duration) bool {
	if now.Sub(since) < grace {
		return false
	}
	return p.LastHandshakeTime.IsZero() || now.Sub(p.LastHandshakeTime) > peers.SessionLifetime+grace
}

// stats reads every device's peers for the statistics collector, none before Setup.
func (c *Peering) stats() []deviceStats {
	if !c.devicesSet.Load() {
		return nil
	}
	names := make([]string, 0, len(c.remotes))
	for n := range c.remotes {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []deviceStats
	now, grace := time.Now(), c.handshakeGrace()
	for _, n := range names {
		if r, _ := c.roleOf(n); !r.holdsPeers() {
			continue // no peers for the remote on a node that is not its gateway, by design
		}
		rc := c.remotes[n]
		ps, err := c.devices.Peers(rc.dev.Device)
		if err != nil {
			c.log.Warn("reading device statistics", "device", rc.dev.Device, "err", err)
			continue
		}
		d := deviceStats{Device: rc.dev.Device, Remote: n}
		rc.mu.Lock()
		for _, p := range ps {
			d.Peers = append(d.Peers, peerStatsOf(p, rc.byKey))
			if rec, desired := rc.byKey[p.PublicKey]; desired && withoutHandshake(p, rec.Since, now, grace) {
				d.WithoutHandshake++
			}
		}
		rc.mu.Unlock()
		out = append(out, d)
	}
	return out
}

// peerStatsOf are the statistics of device peer p; byKey names the desired ones (a peer about
// to be removed is named by its key).
func peerStatsOf(p wgtypes.Peer, byKey map[wgtypes.Key]peerRecord) peerStats {
	rec, desired := byKey[p.PublicKey]
	s := peerStats{Node: rec.Node, EndpointPublished: rec.EndpointPublished, ReceivedBytes: p.ReceiveBytes, Sent: p.TransmitBytes}
	if !desired {
		s.Node, s.EndpointPublished = p.PublicKey.String(), p.Endpoint != nil
	}
	if !p.LastHandshakeTime.IsZero() {
		s.LastHandshakeUnix = float64(p.LastHandshakeTime.UnixNano()) / 1e9
	}
	return s
}
