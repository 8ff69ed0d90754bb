package peers

import (
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// A new peer's first handshake can be lost for a reason that is gone a moment later: the
// address it is reached at forwards to it only from the load balancer's next health check (a
// gateway just elected), or the other side learns this node's key a moment after this node
// learnt its. WireGuard then tries again only after REKEY_TIMEOUT (5 s). A peer created afresh
// sends its first handshake at once, so while a new peer has completed none, it is created
// afresh every RetryEvery, for RetryWindow after it was first configured.
const (
	RetryEvery  = time.Second
	RetryWindow = 6 * time.Second
)

// Configured is when a peer was first configured, and last created (first or afresh).
type Configured struct {
	First, Last time.Time
}

// Retries are the changes that create afresh each peer of desired that the device has with an
// endpoint, that has completed no handshake, that was first configured within RetryWindow and
// last created at least RetryEvery ago (configured says, by key): its removal, then the peer as
// desired. retried are their keys; again is whether a peer may need it later (then sync again
// in RetryEvery).
func Retries(desired []Peer, actual []wgtypes.Peer, keepalive time.Duration, configured func(wgtypes.Key) (Configured, bool), now time.Time) (changes []wgtypes.PeerConfig, retried []wgtypes.Key, again bool) {
	have := map[wgtypes.Key]wgtypes.Peer{}
	for _, a := range actual {
		have[a.PublicKey] = a
	}
	for _, d := range desired {
		a, had := have[d.PublicKey]
		c, known := configured(d.PublicKey)
		if !known || d.Endpoint == nil || !a.LastHandshakeTime.IsZero() || now.Sub(c.First) >= RetryWindow {
			continue
		}
		// A peer the device does not have yet (added since actual was read) is new: it may
		// need a retry later, not now.
		again = true
		if !had || now.Sub(c.Last) < RetryEvery {
			continue
		}
		ka := keepalive
		changes = append(changes,
			wgtypes.PeerConfig{PublicKey: d.PublicKey, Remove: true},
			wgtypes.PeerConfig{PublicKey: d.PublicKey, Endpoint: d.Endpoint, PersistentKeepaliveInterval: &ka, ReplaceAllowedIPs: true, AllowedIPs: d.AllowedIPs})
		retried = append(retried, d.PublicKey)
	}
	return changes, retried, again
}
