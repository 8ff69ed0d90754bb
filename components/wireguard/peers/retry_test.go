package peers_test

import (
	"net"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// A new peer without a handshake is created afresh every RetryEvery within RetryWindow of its
// first configuration; not one that shook hands, has no endpoint, is older, or was just created.
func TestRetriesCreateAFreshOnlyNewPeersWithoutHandshake(t *testing.T) {
	key := func() wgtypes.Key {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return k.PublicKey()
	}
	now := time.Unix(1_000_000, 0)
	endpoint := &net.UDPAddr{IP: net.ParseIP("203.0.113.21"), Port: 51821}
	fresh, shook, silent, old, just := key(), key(), key(), key(), key()
	desired := []peers.Peer{
		{Node: "fresh", PublicKey: fresh, Endpoint: endpoint},
		{Node: "shook", PublicKey: shook, Endpoint: endpoint},
		{Node: "silent", PublicKey: silent},
		{Node: "old", PublicKey: old, Endpoint: endpoint},
		{Node: "just", PublicKey: just, Endpoint: endpoint},
	}
	actual := []wgtypes.Peer{{PublicKey: fresh}, {PublicKey: shook, LastHandshakeTime: now}, {PublicKey: silent}, {PublicKey: old}, {PublicKey: just}}
	configured := map[wgtypes.Key]peers.Configured{
		fresh:  {First: now.Add(-2 * time.Second), Last: now.Add(-time.Second)},
		shook:  {First: now.Add(-2 * time.Second), Last: now.Add(-2 * time.Second)},
		silent: {First: now.Add(-2 * time.Second), Last: now.Add(-2 * time.Second)},
		old:    {First: now.Add(-peers.RetryWindow), Last: now.Add(-2 * time.Second)},
		just:   {First: now.Add(-3 * time.Second), Last: now.Add(-500 * time.Millisecond)},
	}
	lookup := func(k wgtypes.Key) (peers.Configured, bool) { c, ok := configured[k]; return c, ok }
	changes, retried, again := peers.Retries(desired, actual, 5*time.Second, lookup, now)
	if len(retried) != 1 || retried[0] != fresh || !again {
		t.Fatalf("retried %v (again %v), want only fresh's key, and again", retried, again)
	}
	if len(changes) != 2 || !changes[0].Remove || changes[1].Remove || changes[1].Endpoint != endpoint || changes[0].PublicKey != fresh || changes[1].PublicKey != fresh {
		t.Errorf("changes %+v, want fresh removed, then added with its endpoint", changes)
	}
	// A peer added since actual was read is not retried yet, but asks for a sync later.
	added := key()
	configured[added] = peers.Configured{First: now, Last: now}
	withAdded := append(desired, peers.Peer{Node: "added", PublicKey: added, Endpoint: endpoint})
	onlyAdded := []wgtypes.Peer{{PublicKey: shook, LastHandshakeTime: now}}
	if changes, _, again := peers.Retries(withAdded, onlyAdded, 5*time.Second, lookup, now); len(changes) != 0 || !again {
		t.Errorf("with a peer added since: changes %+v, again %v; want none, and again", changes, again)
	}
	// Once it shook hands, or the window passed, nothing is retried nor asked again.
	actual[0].LastHandshakeTime = now
	actual[4].LastHandshakeTime = now
	if changes, _, again := peers.Retries(desired, actual, 5*time.Second, lookup, now); len(changes) != 0 || again {
		t.Errorf("after the handshakes: changes %+v, again %v; want none", changes, again)
	}
}
