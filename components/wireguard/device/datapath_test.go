package device

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// nodeConfig is one simulated node of the two-node tests: its underlay interface, address and
// gateway, its WireGuard device and the one peer it talks to.
type nodeConfig struct {
	Underlay     string
	UnderlayAddr string
	// Gateway, when set, is the node's default route: a router in front of it.
	Gateway     string
	Device      string
	PrivateKey  string
	ListenPort  int
	TunnelAddrs []string // on the device, host routes only: traffic needs our routes
	PeerKey     string
	// PeerEndpoint is empty for a peer that publishes none.
	PeerEndpoint   string
	PeerAllowedIPs []string
	PeerKeepalive  time.Duration
	Routes         []string
}

// peerStat is what the helper node reports about its peers.
type peerStat struct {
	Key           string
	LastHandshake time.Time
	RxBytes       int64
	TxBytes       int64
}

// setupNode brings up a node's underlay, WireGuard device, peer, addresses and routes.
// The two-node tests run it for node A in the test process and, through helperMain, for
// node B in its own namespaces.
func setupNode(m *Manager, cfg nodeConfig) error {
	if err := setupUnderlay(cfg); err != nil {
		return err
	}
	return setupDevice(m, cfg)
}

// setupDevice ensures the node's device, its peer, addresses and routes: all of setupNode but
// the underlay, and what a restarted process does again.
func setupDevice(m *Manager, cfg nodeConfig) error {
	key, err := wgtypes.ParseKey(cfg.PrivateKey)
	if err != nil {
		return err
	}
	if err := m.Ensure(cfg.Device, key, cfg.ListenPort, 1420); err != nil {
		return err
	}
	peer, err := peerConfig(cfg)
	if err != nil {
		return err
	}
	if err := m.ConfigurePeers(cfg.Device, []wgtypes.PeerConfig{peer}); err != nil {
		return err
	}
	if err := addTunnelAddrs(cfg.Device, cfg.TunnelAddrs); err != nil {
		return err
	}
	routes, err := parseCIDRs(cfg.Routes)
	if err != nil {
		return err
	}
	_, _, err = m.SyncRoutes(cfg.Device, routes)
	return err
}

// setupUnderlay gives the underlay link its address, brings it up and adds the default route
// via the gateway, if any.
func setupUnderlay(cfg nodeConfig) error {
	underlay, err := netlink.LinkByName(cfg.Underlay)
	if err != nil {
		return fmt.Errorf("underlay %s: %w", cfg.Underlay, err)
	}
	addr, err := netlink.ParseAddr(cfg.UnderlayAddr)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(underlay, addr); err != nil {
		return fmt.Errorf("underlay address: %w", err)
	}
	if err := netlink.LinkSetUp(underlay); err != nil {
		return err
	}
	if cfg.Gateway == "" {
		return nil
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: underlay.Attrs().Index, Gw: net.ParseIP(cfg.Gateway)}); err != nil {
		return fmt.Errorf("default route via %s: %w", cfg.Gateway, err)
	}
	return nil
}

// peerConfig is the configuration of the node's one peer.
func peerConfig(cfg nodeConfig) (wgtypes.PeerConfig, error) {
	peerKey, err := wgtypes.ParseKey(cfg.PeerKey)
	if err != nil {
		return wgtypes.PeerConfig{}, err
	}
	allowed, err := parseCIDRs(cfg.PeerAllowedIPs)
	if err != nil {
		return wgtypes.PeerConfig{}, err
	}
	peer := wgtypes.PeerConfig{PublicKey: peerKey, ReplaceAllowedIPs: true, AllowedIPs: allowed}
	if cfg.PeerKeepalive > 0 {
		peer.PersistentKeepaliveInterval = &cfg.PeerKeepalive
	}
	if cfg.PeerEndpoint != "" {
		if peer.Endpoint, err = net.ResolveUDPAddr("udp", cfg.PeerEndpoint); err != nil {
			return wgtypes.PeerConfig{}, err
		}
	}
	return peer, nil
}

// addTunnelAddrs puts addrs on the device, without duplicate address detection; addresses it
// already has are kept.
func addTunnelAddrs(device string, addrs []string) error {
	dev, err := netlink.LinkByName(device)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			return err
		}
		addr.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrReplace(dev, addr); err != nil {
			return fmt.Errorf("tunnel address %s: %w", a, err)
		}
	}
	return nil
}

func parseCIDRs(ss []string) ([]net.IPNet, error) {
	var out []net.IPNet
	for _, s := range ss {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *n)
	}
	return out, nil
}

// helperMain is node B of the two-node tests, running in namespaces of its own. It
// speaks lines on stdin/stdout: it says "ready <pid>" (so the test can move the veth
// end into its network namespace), reads its nodeConfig as JSON, answers "configured"
// or "error: ...", then answers "stats" with its peers as JSON until stdin closes, when
// it shuts its device down and exits.
func helperMain() int {
	if err := testbed.EnterNamespaces(); err != nil {
		fmt.Printf("error: %v\n", err)
		return 1
	}
	fmt.Printf("ready %d\n", os.Getpid())

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	if !in.Scan() {
		return 1
	}
	var cfg nodeConfig
	if err := json.Unmarshal(in.Bytes(), &cfg); err != nil {
		fmt.Printf("error: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", "b")
	m, err := NewManager(ModeUserspace, log)
	if err != nil {
		fmt.Printf("error: %v\n", err)
		return 1
	}
	defer m.Close()
	if err := setupNode(m, cfg); err != nil {
		fmt.Printf("error: %v\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
	fmt.Println("configured")

	for in.Scan() {
		switch in.Text() {
		case "stats":
			peers, err := m.PeerStats(cfg.Device)
			if err != nil {
				fmt.Printf("error: %v\n", err)
				continue
			}
			var stats []peerStat
			for _, p := range peers {
				stats = append(stats, peerStat{p.PublicKey.String(), p.LastHandshakeTime, p.ReceiveBytes, p.TransmitBytes})
			}
			b, _ := json.Marshal(stats)
			fmt.Println(string(b))
		default:
			fmt.Printf("error: unknown command %q\n", in.Text())
		}
	}
	return 0
}

// helperNode is the test's handle on a running helperMain.
type helperNode struct {
	t      *testing.T
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr *testenv.Buffer
	pid    int
}

func startHelperNode(t *testing.T) *helperNode {
	t.Helper()
	cmd, err := testbed.NamespacedCommand([]string{envHelper + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	h := &helperNode{t: t, stderr: &testenv.Buffer{}}
	cmd.Stderr = h.stderr
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stdin.Close() // the helper closes its device and exits; its namespaces go with it
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("helper node: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("helper node did not exit, killing it")
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("helper node stderr:\n%s", h.stderr.String())
		}
	})

	line := h.read()
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "ready "))
	if err != nil {
		t.Fatalf("helper node: %q", line)
	}
	h.pid = pid
	return h
}

// read returns the helper's next output line, failing on "error: ..." or silence.
func (h *helperNode) read() string {
	h.t.Helper()
	lines := make(chan string, 1)
	go func() {
		if h.stdout.Scan() {
			lines <- h.stdout.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			h.t.Fatalf("helper node exited; stderr:\n%s", h.stderr.String())
		}
		if strings.HasPrefix(line, "error: ") {
			h.t.Fatalf("helper node: %s; stderr:\n%s", line, h.stderr.String())
		}
		return line
	case <-time.After(30 * time.Second):
		h.t.Fatalf("helper node silent for 30s; stderr:\n%s", h.stderr.String())
	}
	return ""
}

func (h *helperNode) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// configure sends the helper its node's configuration and waits until it is set up.
func (h *helperNode) configure(cfg nodeConfig) {
	h.t.Helper()
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(string(cfgJSON))
	if line := h.read(); line != "configured" {
		h.t.Fatalf("helper node: %q", line)
	}
}

func (h *helperNode) stats() []peerStat {
	h.t.Helper()
	h.send("stats")
	var stats []peerStat
	if err := json.Unmarshal([]byte(h.read()), &stats); err != nil {
		h.t.Fatal(err)
	}
	return stats
}

var pingSeq atomic.Uint32

// ping sends one ICMP echo request from src to dst and waits for the reply.
func ping(src, dst net.IP, timeout time.Duration) error {
	network, request, reply := "ip4:icmp", byte(8), byte(0)
	if dst.To4() == nil {
		network, request, reply = "ip6:ipv6-icmp", 128, 129
	}
	c, err := net.ListenPacket(network, src.String())
	if err != nil {
		return err
	}
	defer c.Close()

	id, seq := uint16(os.Getpid()), uint16(pingSeq.Add(1))
	msg := []byte{request, 0, 0, 0, byte(id >> 8), byte(id), byte(seq >> 8), byte(seq), 's', 'e', 'm', 'a', 'p', 'h', 'o', 'r', 'e'}
	if request == 8 { // the kernel fills in ICMPv6 checksums, not ICMPv4 ones
		cs := icmpChecksum(msg)
		msg[2], msg[3] = byte(cs>>8), byte(cs)
	}
	if _, err := c.WriteTo(msg, &net.IPAddr{IP: dst}); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return err
		}
		if ip, ok := from.(*net.IPAddr); ok && ip.IP.Equal(dst) && n >= 8 && buf[0] == reply &&
			buf[4] == msg[4] && buf[5] == msg[5] && buf[6] == msg[6] && buf[7] == msg[7] {
			return nil
		}
	}
}

func icmpChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pingUntil pings until a reply arrives or tries run out (the first packets wait for
// the handshake).
func pingUntil(src, dst net.IP, tries int) error {
	var err error
	for range tries {
		if err = ping(src, dst, time.Second); err == nil {
			return nil
		}
	}
	return err
}

func peerByKey(peers []wgtypes.Peer, key wgtypes.Key) *wgtypes.Peer {
	for i := range peers {
		if peers[i].PublicKey == key {
			return &peers[i]
		}
	}
	return nil
}

// TestTwoNodesDataPath proves the data path: two nodes, each a network and mount
// namespace with its own userspace WireGuard device, joined by a veth underlay
// (192.0.2.0/24). Each node's "pod" addresses (198.18.x.y, fd00:x::y) exist only on
// its WireGuard device and are reachable from the other node only through the
// tunnel, by the routes SyncRoutes installs.
// twoNodes is node A (this process, through mA) and node B (a helper process in its own
// namespaces) of the two-node tests, each with a device whose one peer is the other.
type twoNodes struct {
	mA         *Manager
	b          *helperNode
	cfgA, cfgB nodeConfig
	keyA, keyB wgtypes.Key
}

// startTwoNodes sets up both nodes: a veth underlay (192.0.2.0/24), node A's "pod" addresses
// 198.18.1.1 and fd00:1::1, node B's 198.18.2.1 and fd00:2::1, each on its own device only.
// tweak, when given, changes the nodes' configurations first.
func startTwoNodes(t *testing.T, tweak ...func(a, b *nodeConfig)) twoNodes {
	t.Helper()
	mA := newUserspace(t)
	b := startHelperNode(t)

	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "smp-veth-a"}, PeerName: "smp-veth-b"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) }) // usually gone already, with node B's namespace
	if err := netlink.LinkSetNsPid(mustLink(t, "smp-veth-b"), b.pid); err != nil {
		t.Fatal(err)
	}

	keyA, keyB := genKey(t), genKey(t)
	cfgA := nodeConfig{
		Underlay: "smp-veth-a", UnderlayAddr: "192.0.2.1/24",
		Device: "wg-smp-a", PrivateKey: keyA.String(), ListenPort: 51820,
		TunnelAddrs:  []string{"198.18.1.1/32", "fd00:1::1/128"},
		PeerKey:      keyB.PublicKey().String(),
		PeerEndpoint: "192.0.2.2:51821", PeerAllowedIPs: []string{"198.18.2.0/24", "fd00:2::/64"},
		Routes: []string{"198.18.2.0/24", "fd00:2::/64"},
	}
	cfgB := nodeConfig{
		Underlay: "smp-veth-b", UnderlayAddr: "192.0.2.2/24",
		Device: "wg-smp-b", PrivateKey: keyB.String(), ListenPort: 51821,
		TunnelAddrs:  []string{"198.18.2.1/32", "fd00:2::1/128"},
		PeerKey:      keyA.PublicKey().String(),
		PeerEndpoint: "192.0.2.1:51820", PeerAllowedIPs: []string{"198.18.1.0/24", "fd00:1::/64"},
		Routes: []string{"198.18.1.0/24", "fd00:1::/64"},
	}
	for _, f := range tweak {
		f(&cfgA, &cfgB)
	}
	b.configure(cfgB)
	if err := setupNode(mA, cfgA); err != nil {
		t.Fatal(err)
	}
	return twoNodes{mA: mA, b: b, cfgA: cfgA, cfgB: cfgB, keyA: keyA, keyB: keyB}
}

// TestTwoNodesDataPath proves the data path: two nodes, each a network and mount
// namespace with its own userspace WireGuard device, joined by a veth underlay
// (192.0.2.0/24). Each node's "pod" addresses (198.18.x.y, fd00:x::y) exist only on
// its WireGuard device and are reachable from the other node only through the
// tunnel, by the routes SyncRoutes installs.
func TestTwoNodesDataPath(t *testing.T) {
	nodes := startTwoNodes(t)
	mA, b, cfgA, keyA, keyB := nodes.mA, nodes.b, nodes.cfgA, nodes.keyA, nodes.keyB

	srcV4, dstV4 := net.ParseIP("198.18.1.1"), net.ParseIP("198.18.2.1")
	srcV6, dstV6 := net.ParseIP("fd00:1::1"), net.ParseIP("fd00:2::1")
	if err := pingUntil(srcV4, dstV4, 10); err != nil {
		t.Fatalf("ping %s -> %s through the tunnel: %v", srcV4, dstV4, err)
	}
	if err := pingUntil(srcV6, dstV6, 10); err != nil {
		t.Fatalf("ping %s -> %s through the tunnel: %v", srcV6, dstV6, err)
	}
	t.Logf("ping %s -> %s and %s -> %s through WireGuard: ok", srcV4, dstV4, srcV6, dstV6)

	peers, err := mA.PeerStats("wg-smp-a")
	if err != nil {
		t.Fatal(err)
	}
	pB := peerByKey(peers, keyB.PublicKey())
	if pB == nil || pB.LastHandshakeTime.IsZero() || pB.ReceiveBytes == 0 || pB.TransmitBytes == 0 {
		t.Fatalf("node A's peer B after pings: %+v", pB)
	}
	t.Logf("node A, peer B: last handshake %s, rx %d B, tx %d B", pB.LastHandshakeTime.Format(time.RFC3339Nano), pB.ReceiveBytes, pB.TransmitBytes)
	statsB := b.stats()
	if len(statsB) != 1 || statsB[0].Key != keyA.PublicKey().String() || statsB[0].LastHandshake.IsZero() {
		t.Errorf("node B's peers: %+v, want peer A with a handshake", statsB)
	}

	// A controller restart against an in-sync device writes nothing and keeps the
	// session: same handshake, traffic still flows.
	handshake := pB.LastHandshakeTime
	before := mA.Counters()
	if err := mA.Ensure("wg-smp-a", keyA, 51820, 1420); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mA.SyncRoutes("wg-smp-a", cidrs(t, cfgA.Routes...)); err != nil {
		t.Fatal(err)
	}
	if got := mA.Counters(); got != before {
		t.Errorf("in-sync Ensure+SyncRoutes wrote: %+v -> %+v", before, got)
	}

	// Adding an unrelated peer leaves peer B's session alone.
	if err := mA.ConfigurePeers("wg-smp-a", []wgtypes.PeerConfig{{
		PublicKey: genKey(t).PublicKey(), AllowedIPs: cidrs(t, "198.18.3.0/24"),
		Endpoint: &net.UDPAddr{IP: net.ParseIP("192.0.2.3"), Port: 51820},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := ping(srcV4, dstV4, 2*time.Second); err != nil {
		t.Errorf("ping after adding another peer: %v", err)
	}
	peers, err = mA.PeerStats("wg-smp-a")
	if err != nil {
		t.Fatal(err)
	}
	if p := peerByKey(peers, keyB.PublicKey()); p == nil || !p.LastHandshakeTime.Equal(handshake) {
		t.Errorf("peer B's handshake changed from %v: %+v", handshake, p)
	}

	// Without the peer there is no path: the pings really went through WireGuard.
	if err := mA.ConfigurePeers("wg-smp-a", []wgtypes.PeerConfig{{PublicKey: keyB.PublicKey(), Remove: true}}); err != nil {
		t.Fatal(err)
	}
	if err := ping(srcV4, dstV4, time.Second); err == nil {
		t.Error("ping still answered after peer B was removed")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Logf("ping after removing peer B: %v", err)
	}
}

// TestRestartedProcessTakesItsDeviceBackAndTrafficResumes: the process running node A's
// userspace device goes (a controller restart); while none runs, the link and its routes
// stay, so traffic to node B is held back (dropped) rather than refused as unreachable; the
// next process takes the same link back, with the peers the previous one handed over, and
// traffic flows again at once without a route written. Node B is behind a NAT, as far as A
// knows: it publishes no endpoint, and A learnt where it is from its handshakes only; B keeps
// its old session, so without the handed-over endpoint A could not reach it until B gave up
// on that session (15 s).
func TestRestartedProcessTakesItsDeviceBackAndTrafficResumes(t *testing.T) {
	nodes := startTwoNodes(t, func(a, b *nodeConfig) {
		a.PeerEndpoint = ""
		b.PeerKeepalive = time.Minute // B's keepalive makes the first handshake, and no other soon
	})
	stateDir := t.TempDir()
	nodes.mA.SetStateDir(stateDir)
	src, dst := net.ParseIP("198.18.1.1"), net.ParseIP("198.18.2.1")
	if err := pingUntil(src, dst, 10); err != nil {
		t.Fatalf("ping through the tunnel before the restart: %v", err)
	}
	index := mustLink(t, nodes.cfgA.Device).Attrs().Index
	if err := nodes.mA.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PeersFile(stateDir, nodes.cfgA.Device)); err != nil {
		t.Fatalf("Close handed no peers over: %v", err)
	}

	routes, err := netlink.RouteGet(dst)
	if err != nil || len(routes) == 0 || routes[0].LinkIndex != index {
		t.Fatalf("route to %s with no process serving the device: %v, %v; want through link %d", dst, routes, err, index)
	}
	if err := ping(src, dst, 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ping with no process serving the device: %v; want no answer (dropped), not an error", err)
	}

	next := newUserspace(t)
	next.SetStateDir(stateDir)
	if err := next.Ensure(nodes.cfgA.Device, nodes.keyA, nodes.cfgA.ListenPort, 1420); err != nil {
		t.Fatalf("the next process taking node A's device back: %v", err)
	}
	// Handed over: where B is, learnt from its handshakes. Not handed over: what the agent sets
	// from what the remote publishes now, so the restored peer starts no handshake of its own.
	restored, err := next.Peers(nodes.cfgA.Device)
	if err != nil {
		t.Fatal(err)
	}
	if len(restored) != 1 || restored[0].PublicKey != nodes.keyB.PublicKey() || restored[0].Endpoint.String() != "192.0.2.2:51821" ||
		len(restored[0].AllowedIPs) != 0 || restored[0].PersistentKeepaliveInterval != 0 || !restored[0].LastHandshakeTime.IsZero() {
		t.Errorf("peers restored from the handover: %+v; want B at 192.0.2.2:51821, endpoint only", restored)
	}
	if err := setupDevice(next, nodes.cfgA); err != nil {
		t.Fatalf("the next process setting node A's device up: %v", err)
	}
	if got := next.Counters(); got.LinkChanges != 0 || got.RouteChanges != 0 {
		t.Errorf("the next process wrote links or routes: %+v", got)
	}
	if got := mustLink(t, nodes.cfgA.Device).Attrs().Index; got != index {
		t.Errorf("device is link %d after the restart, want the same link %d", got, index)
	}
	if _, err := os.Stat(PeersFile(stateDir, nodes.cfgA.Device)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the handed-over peers are still there after being restored: %v", err)
	}
	restarted := time.Now()
	if err := pingUntil(src, dst, 3); err != nil {
		t.Fatalf("ping through the tunnel after the restart, to a peer that publishes no endpoint: %v", err)
	}
	t.Logf("traffic through the tunnel again %s after the next process took the device back", time.Since(restarted).Round(time.Millisecond))
}
