//go:build linux

package datapath

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// runScript gives the controller its own mount namespace with a private /var/run, so that the
// UAPI sockets of userspace WireGuard (in /var/run/wireguard, which network namespaces share)
// do not clash between simulated nodes. A tmpfs over the whole of /var/run (instead of over
// /var/run/wireguard alone) leaves nothing on the host: /var/run/wireguard need not exist
// there, and mount -n keeps libmount from creating /run/mount on the host's /run either.
// `ip netns exec`, unshare and sh all exec, so the process we start is the controller.
const runScript = `mount -n -t tmpfs -o mode=0755 semaphore-run /var/run && mkdir /var/run/wireguard && exec "$0"`

// node is one simulated node: a network namespace running one controller.
type node struct {
	name, cluster, remote string
	netns                 string
	underlay              string   // address on the shared underlay
	podCIDR, pod          string   // pod CIDR (none for a node run the Calico way) and the "pod" address in it
	morePods              []string // further pod addresses the node holds, beside pod
	extraEnv              []string // added to the controller's environment
	index                 int

	dir, keyDir, logPath string
	env                  []string
	bin                  string
	proc                 *proc
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (n *node) device() string   { return peers.DeviceName(n.remote) }
func (n *node) keyFile() string  { return filepath.Join(n.keyDir, n.device()+".key") }
func (n *node) String() string   { return n.name }
func (n *node) endpoint() string { return net.JoinHostPort(n.underlay, listenPort) }

// newLab builds the topology of a data-path test for nodes (gcp's and aws's): the underlay and the nodes' network namespaces, an API server per
// cluster (started with opts), the Node objects, and each node's kubeconfigs and environment.
// It returns the API servers by cluster name. The controllers are not running yet:
// startControllers starts them. When the test fails, it logs every controller's output.
func newLab(t *testing.T, opts testenv.Options, nodes []*node) map[string]*testenv.Cluster {
	t.Helper()
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/wireguard")
	id := randomID(t)
	ordinal := map[string]int{} // of each node within its cluster
	for i, n := range nodes {
		n.index = i
		ordinal[n.cluster]++
		n.netns = fmt.Sprintf("smp-%s-%s%d", id, n.cluster[:1], ordinal[n.cluster])
	}
	buildUnderlay(t, id, nodes)

	clusters := testenv.Start(t, opts, "gcp", "aws")
	byName := map[string]*testenv.Cluster{"gcp": clusters[0], "aws": clusters[1]}
	for _, n := range nodes {
		createNode(t, byName[n.cluster], n)
	}
	for _, n := range nodes {
		prepare(t, n, byName, bin)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				b, _ := os.ReadFile(n.logPath)
				t.Logf("----- log of %s (%s) -----\n%s", n.name, n.netns, b)
			}
		}
	})
	return byName
}

// startControllers starts the controller of every node; each is stopped when the test ends.
// Should the test fail, what every device says of its peers is logged first, while the
// controllers, and with them the userspace devices, still run.
func startControllers(t *testing.T, nodes []*node) {
	t.Helper()
	for _, n := range nodes {
		n.start(t)
		t.Cleanup(func() { n.stop(t) })
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("----- WireGuard of %s (%s) -----\n%s", n, n.netns, n.wireguardState(nodes))
			}
		}
	})
}

// wireguardState is what n's device says of its peers, each named by the node whose key file
// holds its key, and the routes and counters of the device, for a failing test's log.
func (n *node) wireguardState(nodes []*node) string {
	var b strings.Builder
	names := map[string]string{}
	for _, o := range nodes {
		if k, err := keyFromFile(o.keyFile()); err == nil {
			names[k.PublicKey().String()] = o.name
		}
	}
	if sock, err := n.wireguardSocket(); err != nil {
		fmt.Fprintln(&b, err)
	} else if ps, err := testbed.WireGuardPeers(sock); err != nil {
		fmt.Fprintln(&b, err)
	} else {
		for _, p := range ps {
			fmt.Fprintf(&b, "%s: %s\n", names[p.PublicKey], p)
		}
	}
	for _, args := range [][]string{{"-4", "route", "show", "dev", n.device()}, {"-s", "link", "show", "dev", n.device()}} {
		out, _ := exec.Command("ip", append([]string{"-n", n.netns}, args...)...).CombinedOutput()
		b.Write(out)
	}
	return b.String()
}

// wireguardSocket is the UAPI socket of n's userspace device, which sits in the private
// /var/run of n's controller and is reached through that process's root.
func (n *node) wireguardSocket() (string, error) {
	if n.proc == nil {
		return "", fmt.Errorf("%s: controller not running", n)
	}
	run, err := filepath.EvalSymlinks("/var/run") // /run: a symlink would leave the process's root
	if err != nil {
		return "", err
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", n.proc.cmd.Process.Pid), run, "wireguard", n.device()+".sock"), nil
}

// eventually is testenv.Eventually that gives up at once when a controller has exited.
func eventually(t *testing.T, nodes []*node, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, func() error {
		for _, n := range nodes {
			if p := n.proc; p != nil {
				select {
				case <-p.done:
					t.Fatalf("%s: the controller of %s exited: %v", what, n, p.err)
				default:
				}
			}
		}
		return check()
	})
}

// requireLab skips the test where it cannot build its network: it needs root, iproute2,
// unshare, mount and a TUN device for userspace WireGuard (in CI, where make test installs the
// tools first, a missing tool fails it).
func requireLab(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("data-path test skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("data-path test needs root: it creates network namespaces, veths and WireGuard devices")
	}
	for _, tool := range []string{"ip", "unshare", "sh", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipForMissing(t, "data-path test needs %s (bash ci/node-packages.sh installs it): %v", tool, err)
		}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("data-path test needs /dev/net/tun for userspace WireGuard: %v", err)
	}
}

func randomID(t *testing.T) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// buildUnderlay creates a namespace holding a bridge, and one namespace per node joined to it by
// a veth, with the node's underlay address, its pod addresses (on a dummy interface, or on lo
// where the kernel lacks the dummy driver, as here) and no other route (netnstopo, as the lab
// builds its nodes). Every interface name carries id, so the final check can tell that none
// ended up on the host.
func buildUnderlay(t *testing.T, id string, nodes []*node) {
	t.Helper()
	underlay := netnstopo.Underlay{Netns: "smp-" + id + "-ul", Bridge: "br" + id}

	var created []string
	t.Cleanup(func() {
		for _, ns := range created {
			if err := netnstopo.DeleteNetns(ns); err != nil {
				t.Error(err)
			}
		}
		out, err := exec.Command("ip", "netns", "list").CombinedOutput()
		if err != nil {
			t.Errorf("ip netns list: %v: %s", err, out)
		} else if strings.Contains(string(out), "smp-"+id) {
			t.Errorf("network namespaces left behind:\n%s", out)
		}
		out, err = exec.Command("ip", "-o", "link", "show").CombinedOutput()
		if err != nil {
			t.Errorf("ip link show: %v: %s", err, out)
		} else if strings.Contains(string(out), id) {
			t.Errorf("interfaces of this test in the host namespace:\n%s", out)
		}
	})
	addNetns := func(ns string) {
		if err := netnstopo.AddNetns(ns); err != nil {
			t.Fatal(err)
		}
		created = append(created, ns)
	}

	addNetns(underlay.Netns)
	if err := underlay.AddBridge(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		addNetns(n.netns)
		link := netnstopo.Node{Netns: n.netns, Link: "ul" + id, Port: fmt.Sprintf("v%s%d", id, n.index), Addr: n.underlay + "/24"}
		if err := underlay.Join(link); err != nil {
			t.Fatal(err)
		}
		if err := netnstopo.AddLocalAddrs(n.netns, "pod"+id, append([]string{n.pod}, n.morePods...)...); err != nil {
			t.Fatal(err)
		}
	}
	// The underlay works (and the nodes know no route to any pod CIDR but their own).
	for _, n := range nodes[1:] {
		if err := ping(nodes[0].netns, nodes[0].underlay, n.underlay, 2*time.Second); err != nil {
			t.Fatalf("underlay: %s cannot reach %s: %v", nodes[0], n, err)
		}
	}
	if err := pingFails(nodes[0].netns, nodes[0].pod, nodes[len(nodes)-1].pod); err != nil {
		t.Fatalf("before WireGuard: %v", err)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// createNode creates n's Node object with its pod CIDR (none when n has none, as under Calico
// IPAM) and, through the status subresource, its underlay address as InternalIP.
func createNode(t *testing.T, c *testenv.Cluster, n *node) {
	t.Helper()
	ctx := context.Background()
	var spec corev1.NodeSpec
	if n.podCIDR != "" {
		spec = corev1.NodeSpec{PodCIDR: n.podCIDR, PodCIDRs: []string{n.podCIDR}}
	}
	obj, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.underlay}, {Type: corev1.NodeHostName, Address: n.name}}
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// prepare writes n's kubeconfigs, which reach the API servers through forwarders listening on
// 127.0.0.1 inside n's namespace, and its environment (ending with n.extraEnv).
func prepare(t *testing.T, n *node, clusters map[string]*testenv.Cluster, bin string) {
	t.Helper()
	n.bin = bin
	n.dir = t.TempDir()
	n.keyDir = filepath.Join(n.dir, "keys")
	n.logPath = filepath.Join(n.dir, "controller.log")
	local := filepath.Join(n.dir, "local-kubeconfig")
	writeKubeconfig(t, clusters[n.cluster], n.netns, local)
	writeKubeconfig(t, clusters[n.remote], n.netns, filepath.Join(n.dir, "remotes", n.remote, "kubeconfig"))
	n.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"SEMAPHORE_LOCAL_CLUSTER=" + n.cluster,
		"SEMAPHORE_REMOTES=" + n.remote,
		"SEMAPHORE_REMOTES_DIR=" + filepath.Join(n.dir, "remotes"),
		"SEMAPHORE_LOCAL_KUBECONFIG=" + local,
		"SEMAPHORE_ADMIN_ADDR=127.0.0.1:8080",
		"SEMAPHORE_REMOTE_PROBE_INTERVAL=1s",
		"SEMAPHORE_WG_NODE_NAME=" + n.name,
		"SEMAPHORE_WG_KEY_DIR=" + n.keyDir,
		fmt.Sprintf("SEMAPHORE_WG_LISTEN_PORTS=%s:%s", n.remote, listenPort),
		"SEMAPHORE_WG_MODE=userspace",
		"SEMAPHORE_WG_KEEPALIVE=1s",
	}
	n.env = append(n.env, n.extraEnv...)
}

// writeKubeconfig copies c's kubeconfig to path, pointing it at a forwarder to c's API server
// inside netns. The API server's certificate is for 127.0.0.1, whatever the port.
func writeKubeconfig(t *testing.T, c *testenv.Cluster, netns, path string) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(c.DirectKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Config.Host) // https://127.0.0.1:port/
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.ForwardInto(t, netns, u.Host)
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + addr
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// start runs n's controller in n's network namespace and a mount namespace of its own,
// appending its output to n's log.
func (n *node) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "===== %s: starting in %s\n", time.Now().Format(time.RFC3339Nano), n.netns)
	cmd := exec.Command("ip", "netns", "exec", n.netns, "unshare", "--mount", "--", "sh", "-c", runScript, n.bin)
	cmd.Env = n.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// Should the test binary die, its controllers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the controller of %s: %v", n, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	n.proc = p
}

// stop ends n's controller with SIGTERM (SIGKILL after 15 s); its mount namespace, and with it
// the private /var/run, goes with it.
func (n *node) stop(t *testing.T) {
	t.Helper()
	p := n.proc
	if p == nil {
		return
	}
	n.proc = nil
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("controller of %s exited with %v", n, p.err)
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("controller of %s did not stop within 15s of SIGTERM", n)
	}
}

// kill ends n's controller with SIGKILL, as a node that dies does: it hands nothing over and
// releases no Lease.
func (n *node) kill(t *testing.T) {
	t.Helper()
	p := n.proc
	if p == nil {
		return
	}
	n.proc = nil
	_ = p.cmd.Process.Kill()
	<-p.done
}

// alive adds to err that n's controller has exited, when it has.
func (n *node) alive(err error) error {
	if err == nil || n.proc == nil {
		return err
	}
	select {
	case <-n.proc.done:
		exit := n.proc.err
		if exit == nil {
			exit = errors.New("exit status 0")
		}
		return fmt.Errorf("%w (and the controller of %s exited: %w)", err, n, exit)
	default:
		return err
	}
}

// checkAnnotations checks that n publishes, for its remote, the public key of its key file and
// its underlay endpoint.
func checkAnnotations(ctx context.Context, c *testenv.Cluster, n *node) error {
	obj, err := c.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, err := os.Stat(n.keyFile()); err != nil {
		return n.alive(err)
	}
	key, err := keyFromFile(n.keyFile())
	if err != nil {
		return err
	}
	if got, want := obj.Annotations[peers.PubKeyAnnotation(n.remote)], key.PublicKey().String(); got != want {
		return n.alive(fmt.Errorf("%s: annotation %s=%q, want %q (public key of %s)", n, peers.PubKeyAnnotation(n.remote), got, want, n.keyFile()))
	}
	if got := obj.Annotations[peers.EndpointAnnotation(n.remote)]; got != n.endpoint() {
		return n.alive(fmt.Errorf("%s: annotation %s=%q, want %q", n, peers.EndpointAnnotation(n.remote), got, n.endpoint()))
	}
	return nil
}

func keyFromFile(path string) (wgtypes.Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return wgtypes.Key{}, err
	}
	if fi.Mode().Perm() != 0o600 {
		return wgtypes.Key{}, fmt.Errorf("key file %s has mode %04o, want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return wgtypes.Key{}, err
	}
	return wgtypes.ParseKey(strings.TrimSpace(string(b)))
}

func readKeyFile(t *testing.T, n *node) []byte {
	t.Helper()
	if _, err := keyFromFile(n.keyFile()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(n.keyFile())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func annotation(t *testing.T, c *testenv.Cluster, node, key string) string {
	t.Helper()
	obj, err := c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.Annotations[key]
}

// nodeWrites are the controllers' writes to Node name, from the audit log.
func nodeWrites(t *testing.T, c *testenv.Cluster, name string) testenv.AuditEvents {
	t.Helper()
	var out testenv.AuditEvents
	for _, e := range c.WritesBut(t, userAgent) {
		if e.ObjectRef.Resource == "nodes" && e.ObjectRef.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// checkPeers checks, through n's metrics, that n's device has exactly the nodes want as
// peers and has shaken hands with each.
func (n *node) checkPeers(want []*node) error {
	ss, err := scrape(n.netns)
	if err != nil {
		return n.alive(fmt.Errorf("%s: scraping metrics: %w", n, err))
	}
	if got := value(ss, "semaphore_wg_peers", map[string]string{"device": n.device(), "remote": n.remote}); got != float64(len(want)) {
		return fmt.Errorf("%s: semaphore_wg_peers{device=%q} = %v, want %d", n, n.device(), got, len(want))
	}
	var names []string
	for _, s := range ss {
		if s.Name == "semaphore_wg_peer_last_handshake_timestamp_seconds" && s.Labels["remote"] == n.remote {
			names = append(names, s.Labels["peer"])
			if s.Value <= 0 {
				return fmt.Errorf("%s: no handshake with %s yet", n, s.Labels["peer"])
			}
		}
	}
	var wantNames []string
	for _, w := range want {
		wantNames = append(wantNames, w.name)
	}
	slices.Sort(names)
	if !slices.Equal(names, wantNames) {
		return fmt.Errorf("%s: peers %q, want %q", n, names, wantNames)
	}
	return nil
}

// handshake is the last handshake time of n with peer, from n's metrics (0 when unknown).
func (n *node) handshake(peer *node) float64 {
	ss, err := scrape(n.netns)
	if err != nil {
		return 0
	}
	return value(ss, "semaphore_wg_peer_last_handshake_timestamp_seconds", map[string]string{"remote": n.remote, "peer": peer.name})
}

// checkChanges compares n's semaphore_wg_device_changes_total by operation with want.
func (n *node) checkChanges(want map[string]float64) error {
	ss, err := scrape(n.netns)
	if err != nil {
		return fmt.Errorf("%s: scraping metrics: %w", n, err)
	}
	for op, w := range want {
		if got := value(ss, "semaphore_wg_device_changes_total", map[string]string{"remote": n.remote, "operation": op}); got != w {
			return fmt.Errorf("%s: semaphore_wg_device_changes_total{operation=%q} = %v, want %v", n, op, got, w)
		}
	}
	return nil
}

// checkRoutes checks that the routes the controller owns on n's device are exactly the pod
// CIDRs of want.
func (n *node) checkRoutes(want []*node) error {
	var wantDsts []string
	for _, w := range want {
		wantDsts = append(wantDsts, w.podCIDR)
	}
	return n.checkRouteDsts(wantDsts)
}

// checkRouteDsts checks that the routes the controller owns on n's device are exactly to
// wantDsts.
func (n *node) checkRouteDsts(wantDsts []string) error {
	out, err := exec.Command("ip", "-n", n.netns, "-4", "route", "show", "dev", n.device(), "proto", routeProto).CombinedOutput()
	if err != nil {
		return n.alive(fmt.Errorf("%s: ip route: %w: %s", n, err, out))
	}
	got := routeDsts(string(out))
	wantDsts = slices.Sorted(slices.Values(wantDsts))
	if !slices.Equal(got, wantDsts) {
		return fmt.Errorf("%s: routes of %s via %s: %q, want %q", n, n.device(), routeProto, got, wantDsts)
	}
	return nil
}

// routes lists the IPv4 destinations routed via n's device by anyone (proto empty) or by
// protocol proto.
func (n *node) routes(t *testing.T, proto string) []string {
	t.Helper()
	args := []string{"-n", n.netns, "-4", "route", "show", "dev", n.device()}
	if proto != "" {
		args = append(args, "proto", proto)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return routeDsts(string(out))
}

// routeDsts are the destinations of ip route's output, each as a prefix: ip prints a host
// route's without its length.
func routeDsts(out string) []string {
	var dsts []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			dst := f[0]
			if a, err := netip.ParseAddr(dst); err == nil {
				dst = netip.PrefixFrom(a, a.BitLen()).String()
			}
			dsts = append(dsts, dst)
		}
	}
	slices.Sort(dsts)
	return dsts
}

// scrape reads the metrics of the controller in netns.
func scrape(netns string) ([]testbed.Sample, error) {
	return testbed.Scrape(context.Background(), testbed.HTTPClientInNetns(netns), "http://127.0.0.1:8080/metrics", "")
}

// value sums the samples of name with labels.
func value(ss []testbed.Sample, name string, labels map[string]string) float64 {
	sum, _ := testbed.SampleSum(ss, name, labels)
	return sum
}

// ping sends one ICMP echo request from src to dst inside netns and waits up to timeout for the
// reply (testbed.Ping).
func ping(netns, src, dst string, timeout time.Duration) error {
	_, err := testbed.Ping(netns, src, dst, timeout)
	return err
}

// pingFails checks that three pings from src to dst all go unanswered.
func pingFails(netns, src, dst string) error {
	for range 3 {
		if err := ping(netns, src, dst, time.Second); err == nil {
			return fmt.Errorf("ping %s -> %s in %s answered, want no reply", src, dst, netns)
		}
	}
	return nil
}

// waitAnnotated waits until every node's Node carries its public key and endpoint for the other
// cluster.
func waitAnnotated(ctx context.Context, t *testing.T, nodes []*node, byName map[string]*testenv.Cluster) {
	t.Helper()
	eventually(t, nodes, wait, "nodes annotated with public key and endpoint", func() error {
		for _, n := range nodes {
			if err := checkAnnotations(ctx, byName[n.cluster], n); err != nil {
				return err
			}
		}
		return nil
	})
}
