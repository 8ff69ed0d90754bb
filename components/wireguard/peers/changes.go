package peers

import (
	"net"
	"slices"
	"sort"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// SessionLifetime is how long a WireGuard session is used after its handshake
// (REJECT_AFTER_TIME): a peer whose last handshake is more recent has a working session, at the
// endpoint the device has for it.
const SessionLifetime = 180 * time.Second

// Alive reports whether p, as a device reports it, has a working session at now: a handshake
// within SessionLifetime.
func Alive(p wgtypes.Peer, now time.Time) bool {
	return !p.LastHandshakeTime.IsZero() && now.Sub(p.LastHandshakeTime) < SessionLifetime
}

// Changes returns the minimal peer configuration that turns actual into desired at now: new
// peers added, peers whose endpoint, allowed IPs or keepalive differ updated (replacing their
// allowed IPs), peers no longer wanted removed. A peer that matches is left out entirely, so its
// session is never disturbed.
//
// WireGuard moves a peer's endpoint to wherever its authenticated packets come from (a NAT in
// between, a node that cannot be reached at what it publishes), so the device's endpoint is
// only replaced by the published one when the session there is not alive: a device endpoint
// that differs from the published one while the peer's last handshake is within SessionLifetime
// is kept, as the published one may not be reachable from here at all (a private InternalIP).
// A peer that publishes no endpoint never has one set. Nothing is remembered between calls, so
// a restarted controller decides the same.
func Changes(desired []Peer, actual []wgtypes.Peer, keepalive time.Duration, now time.Time) []wgtypes.PeerConfig {
	have := map[wgtypes.Key]wgtypes.Peer{}
	for _, a := range actual {
		have[a.PublicKey] = a
	}
	want := map[wgtypes.Key]bool{}
	var changes []wgtypes.PeerConfig
	for _, d := range desired {
		want[d.PublicKey] = true
		a, had := have[d.PublicKey]
		endpoint := endpointToSet(d, a, had, now)
		if had && endpoint == nil && sameNets(a.AllowedIPs, d.AllowedIPs) && a.PersistentKeepaliveInterval == keepalive {
			continue
		}
		ka := keepalive
		changes = append(changes, wgtypes.PeerConfig{
			PublicKey:                   d.PublicKey,
			Endpoint:                    endpoint, // nil leaves the device's as it is
			PersistentKeepaliveInterval: &ka,
			ReplaceAllowedIPs:           true,
			AllowedIPs:                  d.AllowedIPs,
		})
	}
	for _, a := range actual {
		if !want[a.PublicKey] {
			changes = append(changes, wgtypes.PeerConfig{PublicKey: a.PublicKey, Remove: true})
		}
	}
	return changes
}

// endpointToSet is the endpoint to give the device for desired peer d, which the device holds as
// a when had; nil when the device's endpoint stays.
func endpointToSet(d Peer, a wgtypes.Peer, had bool, now time.Time) *net.UDPAddr {
	if d.Endpoint == nil || (had && (sameEndpoint(a.Endpoint, d.Endpoint) || keepsRoamed(d, a, now))) {
		return nil
	}
	return d.Endpoint
}

// keepsRoamed reports whether the device's endpoint a.Endpoint, not the one d publishes, is
// kept: the session there is alive.
func keepsRoamed(d Peer, a wgtypes.Peer, now time.Time) bool {
	return d.Endpoint != nil && a.Endpoint != nil && !sameEndpoint(a.Endpoint, d.Endpoint) && Alive(a, now)
}

// KeptUntil is when the first roamed endpoint Changes keeps at now stops being kept (its
// session's handshake grows older than SessionLifetime), so that the caller can sync again
// then; ok is false when Changes keeps none.
func KeptUntil(desired []Peer, actual []wgtypes.Peer, now time.Time) (until time.Time, ok bool) {
	have := map[wgtypes.Key]wgtypes.Peer{}
	for _, a := range actual {
		have[a.PublicKey] = a
	}
	for _, d := range desired {
		a, had := have[d.PublicKey]
		if !had || !keepsRoamed(d, a, now) {
			continue
		}
		if end := a.LastHandshakeTime.Add(SessionLifetime); !ok || end.Before(until) {
			until, ok = end, true
		}
	}
	return until, ok
}

func sameEndpoint(a, b *net.UDPAddr) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.AddrPort() == b.AddrPort() || (a.AddrPort().Addr().Unmap() == b.AddrPort().Addr().Unmap() && a.Port == b.Port)
}

func sameNets(a, b []net.IPNet) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(ns []net.IPNet) []string {
		out := make([]string, 0, len(ns))
		for _, n := range ns {
			out = append(out, n.String())
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}
