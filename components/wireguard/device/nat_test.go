package device

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// natRouter puts a router between this test's network namespace (node A, the public side:
// 192.0.2.0/24, the router at 192.0.2.254 on smp-a-r) and the network namespace of process
// pidB (node B, on premises: 10.0.0.0/24, the router at 10.0.0.1 on smp-b-r). The router
// forwards and masquerades what B sends out, to UDP ports 40000-40999: B reaches A, and
// nothing reaches B unless B started it. A has no route to 10.0.0.0/24.
func natRouter(t *testing.T, pidB int) {
	t.Helper()
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipForMissing(t, "needs %s for the router's namespace and its NAT: %v", tool, err)
		}
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	router := "smp-nat-" + hex.EncodeToString(b[:])
	if err := netnstopo.AddNetns(router); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netnstopo.DeleteNetns(router) })
	inRouter := func(args ...string) []string { return append([]string{"netns", "exec", router}, args...) }
	if err := netnstopo.IP(
		[]string{"link", "add", "smp-a-r", "type", "veth", "peer", "name", "smp-r-a", "netns", router},
		[]string{"-n", router, "link", "add", "smp-r-b", "type", "veth", "peer", "name", "smp-b-r", "netns", strconv.Itoa(pidB)},
		[]string{"-n", router, "addr", "add", "192.0.2.254/24", "dev", "smp-r-a"},
		[]string{"-n", router, "addr", "add", "10.0.0.1/24", "dev", "smp-r-b"},
		[]string{"-n", router, "link", "set", "smp-r-a", "up"},
		[]string{"-n", router, "link", "set", "smp-r-b", "up"},
		inRouter("sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"),
		inRouter("iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "smp-r-a", "-p", "udp", "-j", "MASQUERADE", "--to-ports", "40000-40999"),
	); err != nil {
		t.Fatal(err)
	}
}

// Node B sits on premises behind a source NAT, with no inbound path: it publishes no endpoint,
// and node A peers with it without one. B's keepalive starts the handshake, A's device learns
// B's endpoint from it (the NAT's address and port) and A reaches B's pods through the
// tunnel. When B then publishes its private address, which A cannot reach, the rule of
// peers.Changes keeps the working endpoint while the session lives, without remembering
// anything (a restarted controller decides the same), and gives it up only once the session
// is over.
func TestNodeBehindSourceNATIsReachedWhereItsHandshakesComeFrom(t *testing.T) {
	mA := newUserspace(t)
	b := startHelperNode(t)
	natRouter(t, b.pid)
	keyA, keyB := genKey(t), genKey(t)
	cfgA := nodeConfig{
		Underlay: "smp-a-r", UnderlayAddr: "192.0.2.1/24",
		Device: "wg-smp-a", PrivateKey: keyA.String(), ListenPort: 51820,
		TunnelAddrs: []string{"198.18.1.1/32"}, PeerKey: keyB.PublicKey().String(),
		PeerAllowedIPs: []string{"198.18.2.0/24"}, Routes: []string{"198.18.2.0/24"},
	}
	cfgB := nodeConfig{
		Underlay: "smp-b-r", UnderlayAddr: "10.0.0.2/24", Gateway: "10.0.0.1",
		Device: "wg-smp-b", PrivateKey: keyB.String(), ListenPort: 51821,
		TunnelAddrs: []string{"198.18.2.1/32"}, PeerKey: keyA.PublicKey().String(),
		PeerEndpoint: "192.0.2.1:51820", PeerAllowedIPs: []string{"198.18.1.0/24"}, PeerKeepalive: time.Second,
		Routes: []string{"198.18.1.0/24"},
	}
	if err := setupNode(mA, cfgA); err != nil {
		t.Fatal(err)
	}
	hidden := peers.Peer{Node: "node-b", PublicKey: keyB.PublicKey(), AllowedIPs: cidrs(t, "198.18.2.0/24")}
	if got := peers.Changes([]peers.Peer{hidden}, peerList(t, mA), 0, time.Now()); len(got) != 0 {
		t.Fatalf("node A's device is not in sync with a peer without endpoint: %+v", got)
	}
	b.configure(cfgB)
	if err := pingUntil(net.ParseIP("198.18.1.1"), net.ParseIP("198.18.2.1"), 15); err != nil {
		t.Fatalf("ping node B's pod address through the tunnel: %v", err)
	}
	learned := peerByKey(peerList(t, mA), keyB.PublicKey())
	if learned == nil || learned.Endpoint == nil || !learned.Endpoint.IP.Equal(net.ParseIP("192.0.2.254")) || learned.Endpoint.Port < 40000 || learned.Endpoint.Port > 40999 {
		t.Fatalf("node B's endpoint on node A: %+v, want the NAT's 192.0.2.254:40000-40999", learned)
	}
	t.Logf("node A reaches node B at %s, learned from its handshake", learned.Endpoint)

	published := hidden
	published.Endpoint = &net.UDPAddr{IP: net.ParseIP("10.0.0.2"), Port: 51821} // its InternalIP: A cannot reach it
	actual := peerList(t, mA)
	if got := peers.Changes([]peers.Peer{published}, actual, 0, time.Now()); len(got) != 0 {
		t.Errorf("an unreachable published endpoint would replace the working one: %+v", got)
	}
	if _, kept := peers.KeptUntil([]peers.Peer{published}, actual, time.Now()); !kept {
		t.Error("KeptUntil: the working endpoint is not kept")
	}
	if err := ping(net.ParseIP("198.18.1.1"), net.ParseIP("198.18.2.1"), 2*time.Second); err != nil {
		t.Errorf("ping after a sync that kept the endpoint: %v", err)
	}
	over := peerByKey(actual, keyB.PublicKey()).LastHandshakeTime.Add(peers.SessionLifetime + time.Second)
	if got := peers.Changes([]peers.Peer{published}, actual, 0, over); len(got) != 1 || got[0].Endpoint.String() != "10.0.0.2:51821" {
		t.Errorf("once the session is over: Changes() = %+v, want the published endpoint set", got)
	}
}

// peerList is the peers of node A's device.
func peerList(t *testing.T, m *Manager) []wgtypes.Peer {
	t.Helper()
	ps, err := m.Peers("wg-smp-a")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
