package controller

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A peer counts as without a handshake once the grace has passed since it was configured and it
// has had none, or none within a session's lifetime plus the grace.
func TestPeerWithoutHandshakeAfterTheGrace(t *testing.T) {
	now := time.Unix(1700000000, 0)
	grace := 2 * time.Minute
	for _, tc := range []struct {
		name             string
		since, handshake time.Time
		want             bool
	}{
		{"new, no handshake yet", now.Add(-grace + time.Second), time.Time{}, false},
		{"no handshake after the grace", now.Add(-grace - time.Second), time.Time{}, true},
		{"recent handshake", now.Add(-time.Hour), now.Add(-time.Minute), false},
		{"handshake within the session and the grace", now.Add(-time.Hour), now.Add(-peers.SessionLifetime - grace + time.Second), false},
		{"handshake too old", now.Add(-time.Hour), now.Add(-peers.SessionLifetime - grace - time.Second), true},
	} {
		if got := withoutHandshake(wgtypes.Peer{LastHandshakeTime: tc.handshake}, tc.since, now, grace); got != tc.want {
			t.Errorf("%s: withoutHandshake = %v, want %v", tc.name, got, tc.want)
		}
	}
	for keepalive, want := range map[time.Duration]time.Duration{0: 2 * time.Minute, 25 * time.Second: 2 * time.Minute, time.Minute: 4 * time.Minute} {
		if got := (&Peering{opts: Options{Keepalive: keepalive}}).handshakeGrace(); got != want {
			t.Errorf("grace with keepalive %v = %v, want %v", keepalive, got, want)
		}
	}
}

// A node that publishes no endpoint for a remote says so once; without a keepalive it warns that
// the remote can never reach it.
func TestNoEndpointIsLoggedOnceAndWarnedWithoutKeepalive(t *testing.T) {
	for keepalive, want := range map[time.Duration]string{0: "the remote can never reach it", 25 * time.Second: "answer the handshakes it starts"} {
		var log testenv.Buffer
		c := &Peering{opts: Options{Keepalive: keepalive}, log: slog.New(slog.NewTextHandler(&log, nil))}
		rc := &remoteCache{dev: RemoteDevice{Remote: "aws"}}
		c.noteReachability(rc, true)
		c.noteReachability(rc, false)
		c.noteReachability(rc, false)
		if got := log.String(); strings.Count(got, want) != 1 || strings.Count(got, "\n") != 1 {
			t.Errorf("keepalive %v: logged %q, want one line saying %q", keepalive, got, want)
		}
		if keepalive == 0 && !strings.Contains(log.String(), "level=WARN") {
			t.Errorf("keepalive 0: %q is not a warning", log.String())
		}
	}
}
