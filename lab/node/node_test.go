//go:build linux

package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// The test runs as root in network and mount namespaces of its own (testenv.RunInNamespaces):
// the API server and the registry listen on that namespace's loopback, the node's network
// namespaces are created in it (its /run is a tmpfs of its own), and nothing touches the
// machine's network. Only the node's cgroups and the sysctls kubelet sets are machine-wide;
// the test removes and restores them.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunInNamespaces(m, prepareBinaries))
}

// envBinDir hands the directory with kubelet and kube-proxy to the tests in the namespaces.
const envBinDir = "SEMAPHORE_TEST_KUBE_BIN_DIR"

// prepareBinaries finds (or builds, while there is a network) the Kubernetes binaries, the API
// server's included.
func prepareBinaries() error {
	cmd := exec.Command("bash", filepath.Join(testbed.RepoRoot(), "ci", "kube-binaries.sh"), "all")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("ci/kube-binaries.sh all: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Setenv("KUBEBUILDER_ASSETS", dir)
	}
	return os.Setenv(envBinDir, dir)
}

const (
	testNode     = "node-test" // cgroup /semaphore-lab-node-test
	underlayNS   = "semaphore-node-test-ul"
	nodeNS       = "semaphore-node-test"
	underlayIP   = "198.19.0.1"
	nodeIP       = "198.19.0.11"
	podCIDR      = "198.18.1.0/24"
	clusterCIDR  = "198.18.0.0/17"
	serviceCIDR  = "198.18.128.0/24"
	clusterDNS   = "198.18.128.10"
	testNS       = "node-test"
	ctxTimeout   = 110 * time.Second
	readyTimeout = 60 * time.Second
)

// TestNode starts a real node (containerd, kubelet, kube-proxy) in a network namespace, runs a
// pod on it, reaches the pod, has kube-proxy program a Service, and stops the node, checking
// that nothing of it is left. Each step is a subtest that makes what it needs of the earlier
// ones, so one runs alone: go test ./lab/node -run 'TestNode/kube-proxy'.
func TestNode(t *testing.T) {
	testenv.RequireNamespaces(t)
	requireNodeSupport(t)
	nt := startTestNode(t)
	t.Run("the node has a private directory of its own", nt.privateDirectory)
	t.Run("the Node turns Ready", func(t *testing.T) { nt.waitReady(t) })
	t.Run("a pod runs and the node reaches it", func(t *testing.T) { nt.runningPod(t) })
	t.Run("kube-proxy programs a Service", nt.serviceProgrammed)
	if testing.Verbose() {
		measureIdle(t, nt.n)
	}
	t.Run("stopping leaves nothing behind", nt.stopLeavesNothing)
	t.Logf("%v: all done", time.Since(nt.began).Round(time.Millisecond))
}

// testNodeRun is TestNode's node and what its steps made of it, each made once, by the first
// step that needs it.
type testNodeRun struct {
	ctx   context.Context
	began time.Time
	c     *testenv.Cluster
	cfg   Config
	n     *Node
	image string
	// privateDir is a directory of the node's own (as a pod's hostPath of the lab's nodes is).
	privateDir string
	// Before the node: the machine's mount points and sysctls, and the file that keeps the
	// sysctls for a run that crashes.
	mountpointsBefore, sysctlsBefore []string
	sysctlsFile                      string
	// failures are the checks' failures, said again after the daemons' logs that a failure
	// prints: the end of the output is what a CI report shows.
	failures []string
	ready    bool
	podIP    netip.Addr
}

// errorf fails t's check and keeps it for the summary.
func (nt *testNodeRun) errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	nt.failures = append(nt.failures, fmt.Sprintf(format, args...))
	t.Errorf(format, args...)
}

// startTestNode starts an API server, a registry with the pause image, and the node, after
// removing what a crashed run may have left.
func startTestNode(t *testing.T) *testNodeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctxTimeout)
	t.Cleanup(cancel)
	nt := &testNodeRun{
		ctx: ctx, began: time.Now(),
		sysctlsFile: filepath.Join(os.TempDir(), "semaphore-lab-node-test-sysctls.json"),
		privateDir:  "/var/lib/semaphore-lab-" + testNode,
	}
	// What a run that crashed may have left: the node's processes and cgroups, and the
	// sysctls kubelet set (the values from before are in sysctlsFile).
	if err := Cleanup(testNode); err != nil {
		t.Fatal(err)
	}
	if err := RestoreSysctls(nt.sysctlsFile); err != nil {
		t.Fatal(err)
	}
	reg := nt.startAPIServerAndRegistry(t)
	makeNetwork(t)
	nt.mountpointsBefore = existing(machineMountpoints(append(privatePaths, nt.privateDir)))
	api, err := url.Parse(nt.c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{api.Host, reg} {
		_, stop, err := testbed.ForwardInto(nodeNS, addr, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	tmp := t.TempDir()
	kubeletKubeconfig, proxyKubeconfig := nt.registerNode(t, tmp)
	nt.keepSysctls(t)
	nt.cfg = Config{
		Name:            testNode,
		Netns:           nodeNS,
		IP:              nodeIP,
		PodCIDR:         podCIDR,
		ClusterCIDR:     clusterCIDR,
		ClusterDNS:      clusterDNS,
		ClusterDomain:   "cluster.local",
		Kubeconfig:      kubeletKubeconfig,
		ProxyKubeconfig: proxyKubeconfig,
		Registry:        reg,
		SandboxImage:    nt.image,
		Dir:             filepath.Join(tmp, "node"),
		LogDir:          logDir(t, tmp),
		BinDir:          os.Getenv(envBinDir),
		PrivateDirs:     []string{nt.privateDir},
	}
	t.Cleanup(func() { nt.sayFailures(t) })
	if nt.n, err = Start(ctx, nt.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nt.n.Stop() })
	t.Logf("%v: node started", time.Since(nt.began).Round(time.Millisecond))
	return nt
}

// startAPIServerAndRegistry starts the API server (Node and RBAC authorization, as a cluster's)
// and a registry, and pushes the pause image (the lab's, built while the API server starts);
// it returns the registry's address.
func (nt *testNodeRun) startAPIServerAndRegistry(t *testing.T) string {
	t.Helper()
	imagec := make(chan ggcrv1.ImageIndex, 1)
	go func() { imagec <- buildPause(t) }()
	nt.c = testenv.Start(t, testenv.Options{
		ServiceCIDRs: serviceCIDR,
		APIServerFlags: map[string]string{
			"authorization-mode":       "Node,RBAC",
			"enable-admission-plugins": "NodeRestriction",
		},
	}, "c1")[0]
	pause := <-imagec
	if pause == nil {
		t.FailNow()
	}
	reg := startRegistry(t)
	nt.image = reg + "/lab/pause:test"
	if err := images.Push(context.Background(), nt.image, pause, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: API server up, pause image %s pushed", time.Since(nt.began).Round(time.Millisecond), nt.image)
	return reg
}

// registerNode writes the kubeconfigs of the node's kubelet and kube-proxy into dir and creates
// the Node with its pod CIDR: no controller allocates pod CIDRs here, so the Node exists before
// kubelet registers.
func (nt *testNodeRun) registerNode(t *testing.T, dir string) (kubeletKubeconfig, proxyKubeconfig string) {
	t.Helper()
	kubeletKubeconfig, proxyKubeconfig = filepath.Join(dir, "kubelet.kubeconfig"), filepath.Join(dir, "kube-proxy.kubeconfig")
	if err := nt.c.AddUser(kubeletKubeconfig, "system:node:"+testNode, []string{"system:nodes"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := nt.c.AddUser(proxyKubeconfig, "system:kube-proxy", nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := nt.c.Client.CoreV1().Nodes().Create(nt.ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{corev1.LabelHostname: testNode}},
		Spec:       corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return kubeletKubeconfig, proxyKubeconfig
}

// keepSysctls reads the sysctls kubelet sets before the node starts, keeps them in a file for
// a run that crashes, and restores them when the test ends.
func (nt *testNodeRun) keepSysctls(t *testing.T) {
	t.Helper()
	nt.sysctlsBefore = readSysctls(t)
	if err := SaveSysctls(nt.sysctlsFile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := RestoreSysctls(nt.sysctlsFile); err != nil {
			t.Error(err)
		}
	})
}

// sayFailures prints, when the test failed, the end of the daemons' logs and then the failed
// checks again.
func (nt *testNodeRun) sayFailures(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, d := range []string{"containerd", "kubelet", "kube-proxy"} {
		p := filepath.Join(nt.cfg.LogDir, d+"-"+testNode+".log")
		t.Logf("the end of %s:\n%s", p, logTail(p, 40))
	}
	if len(nt.failures) > 0 {
		t.Logf("failed checks (see above):\n%s", strings.Join(nt.failures, "\n"))
	}
}

// privateDirectory: the node sees Dir/root/<privateDir> at privateDir, and this machine does not.
func (nt *testNodeRun) privateDirectory(t *testing.T) {
	if err := os.WriteFile(filepath.Join(nt.cfg.Dir, "root", nt.privateDir, "mine"), []byte(testNode), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s/mine", nt.n.PIDs()[1], nt.privateDir)); err != nil || string(b) != testNode {
		nt.errorf(t, "kubelet does not see the node's %s: %q, %v", nt.privateDir, b, err)
	}
	if _, err := os.Stat(filepath.Join(nt.privateDir, "mine")); err == nil {
		nt.errorf(t, "this machine sees the node's %s", nt.privateDir)
	}
}

// waitReady waits until the Node is Ready, once.
func (nt *testNodeRun) waitReady(t *testing.T) {
	t.Helper()
	if nt.ready {
		return
	}
	ctx, c := nt.ctx, nt.c
	testenv.Eventually(t, readyTimeout, "the Node is Ready", func() error {
		obj, err := c.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range obj.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return fmt.Errorf("Ready is %s: %s", cond.Status, cond.Message)
				}
				return nil
			}
		}
		return errors.New("no Ready condition")
	})
	t.Logf("%v: Node Ready", time.Since(nt.began).Round(time.Millisecond))
	nt.ready = true
}

// runningPod runs a pod of the pause image on the Ready node, once, and checks that the node
// reaches it at its address, which is in the node's pod CIDR.
func (nt *testNodeRun) runningPod(t *testing.T) netip.Addr {
	t.Helper()
	if nt.podIP.IsValid() {
		return nt.podIP
	}
	nt.waitReady(t)
	ctx, c, image := nt.ctx, nt.c, nt.image
	// A pod of the pause image (no scheduler here: it is bound to the node directly).
	if err := c.EnsureNamespace(ctx, testNS); err != nil {
		t.Fatal(err)
	}
	pod, err := c.Client.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Labels: map[string]string{"app": "pause"}},
		Spec: corev1.PodSpec{
			NodeName:                      testNode,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "pause", Image: image}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var podIP netip.Addr
	testenv.Eventually(t, readyTimeout, "the pod is Running with an address", func() error {
		pod, err = c.Client.CoreV1().Pods(testNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			return fmt.Errorf("phase %s, IP %q, %+v", pod.Status.Phase, pod.Status.PodIP, pod.Status.ContainerStatuses)
		}
		podIP, err = netip.ParseAddr(pod.Status.PodIP)
		return err
	})
	if !netip.MustParsePrefix(podCIDR).Contains(podIP) {
		t.Fatalf("pod IP %s is not in the pod CIDR %s", podIP, podCIDR)
	}
	t.Logf("%v: pod Running at %s", time.Since(nt.began).Round(time.Millisecond), podIP)
	if rtt, err := testbed.Ping(nodeNS, nodeIP, podIP.String(), 2*time.Second); err != nil {
		t.Fatalf("the node cannot reach its pod: %v", err)
	} else {
		t.Logf("ping %s from the node: %v", podIP, rtt)
	}
	nt.podIP = podIP
	return podIP
}

// serviceProgrammed: a Service with the running pod as its endpoint (no endpoint controller
// here: the EndpointSlice is written as it would), which kube-proxy must program.
func (nt *testNodeRun) serviceProgrammed(t *testing.T) {
	podIP := nt.runningPod(t)
	ctx, c := nt.ctx, nt.c
	svc, err := c.Client.CoreV1().Services(testNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(testNS).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "pause-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name,
			discoveryv1.LabelManagedBy:   "node-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{podIP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(testNode),
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "kube-proxy programs the Service's ClusterIP", func() error {
		out, err := exec.Command("nsenter", "--net="+filepath.Join(netnstopo.Dir, nodeNS), "iptables", "-w", "5", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables: %w: %s", err, out)
		}
		if !strings.Contains(string(out), svc.Spec.ClusterIP+"/32") {
			return fmt.Errorf("no rule for %s in KUBE-SERVICES:\n%s", svc.Spec.ClusterIP, out)
		}
		return nil
	})
	t.Logf("%v: ClusterIP %s programmed", time.Since(nt.began).Round(time.Millisecond), svc.Spec.ClusterIP)
}

// stopLeavesNothing stops the node: no process of it runs on, in its cgroups or its mount
// namespace, and its directory, cgroups, mount points and sysctls are gone or as before.
func (nt *testNodeRun) stopLeavesNothing(t *testing.T) {
	n, cfg := nt.n, nt.cfg
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	procs := nodeProcs(hs, testNode)
	mntNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", n.PIDs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) < 5 { // containerd, kubelet, kube-proxy, a shim, pause (sandbox), pause
		nt.errorf(t, "only processes %v in the node's cgroup", procs)
	}
	stopped := time.Now()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(stopped).Round(time.Millisecond))
	for _, pid := range procs {
		// A zombie has exited; reaping it is its parent's business (init's, for the shims
		// and containers).
		if state := procState(pid); state != "" && state != "Z" && state != "X" {
			nt.errorf(t, "process %d (%s) of the node still runs (state %s)", pid, testbed.ProcessName(pid), state)
		}
	}
	if pids := inMountNamespace(mntNS); len(pids) > 0 {
		nt.errorf(t, "processes %v are still in the node's mount namespace", pids)
	}
	for _, h := range hs {
		if _, err := os.Stat(h.dir(testNode)); !errors.Is(err, fs.ErrNotExist) {
			nt.errorf(t, "cgroup %s is left (%v)", h.dir(testNode), err)
		}
	}
	if _, err := os.Stat(cfg.Dir); !errors.Is(err, fs.ErrNotExist) {
		nt.errorf(t, "%s is left (%v)", cfg.Dir, err)
	}
	if others := nodeCgroups(hs); len(others) == 0 {
		if after := existing(machineMountpoints(append(privatePaths, nt.privateDir))); !slices.Equal(after, nt.mountpointsBefore) {
			nt.errorf(t, "mount points before the node: %v, after: %v", nt.mountpointsBefore, after)
		}
	} else {
		t.Logf("other nodes run on this machine (%v): the mount points stay", others)
	}
	if err := RestoreSysctls(nt.sysctlsFile); err != nil {
		t.Fatal(err)
	}
	if after := readSysctls(t); !slices.Equal(after, nt.sysctlsBefore) {
		nt.errorf(t, "sysctls before the node: %v, after: %v", nt.sysctlsBefore, after)
	}
}

// logDir is where the node's logs go: $SEMAPHORE_TEST_NODE_LOGS, to keep them, or a temporary
// directory.
func logDir(t *testing.T, tmp string) string {
	if dir := os.Getenv("SEMAPHORE_TEST_NODE_LOGS"); dir != "" {
		t.Logf("the node's logs are in %s", dir)
		return dir
	}
	return filepath.Join(tmp, "logs")
}

// requireNodeSupport skips the test where a node cannot run: no cgroup v1, or the packages of
// ci/node-packages.sh or the binaries of ci/kube-binaries.sh are missing (in CI, where make
// test installs and builds them first, that fails it).
func requireNodeSupport(t *testing.T) {
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	if len(v1(hs)) == 0 {
		t.Skip("needs cgroup v1 hierarchies (cgroup v2 is not supported yet)")
	}
	if err := checkTools(Config{BinDir: os.Getenv(envBinDir)}); err != nil {
		testenv.SkipForMissing(t, "needs the node's programs: %v", err)
	}
}

// makeNetwork creates the node's network namespace, joined by a veth to a bridge in the
// underlay namespace, both in the test's own network namespace, removed when the test ends.
func makeNetwork(t *testing.T) {
	t.Cleanup(func() {
		for _, ns := range []string{nodeNS, underlayNS} {
			_ = netnstopo.DeleteNetns(ns)
		}
	})
	underlay := netnstopo.Underlay{Netns: underlayNS, Bridge: "br0"}
	for _, step := range []func() error{
		func() error { return netnstopo.AddNetns(underlayNS) },
		func() error { return underlay.AddBridge(underlayIP + "/24") },
		func() error { return netnstopo.AddNetns(nodeNS) },
		func() error {
			return underlay.Join(netnstopo.Node{Netns: nodeNS, Link: "ul0", Port: "node-test", Addr: nodeIP + "/24"})
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testbed.Ping(nodeNS, nodeIP, underlayIP, 2*time.Second); err != nil {
		t.Fatalf("underlay: %v", err)
	}
}

// buildPause builds the image of lab/cmd/pause for this machine, as the lab does; nil when
// that failed (reported).
func buildPause(t *testing.T) ggcrv1.ImageIndex {
	idx, err := images.Build(context.Background(), images.Spec{
		Name: "pause", Package: "./lab/cmd/pause", Platforms: []string{"linux/" + runtime.GOARCH},
	}, images.Options{Dir: testbed.RepoRoot()})
	if err != nil {
		t.Errorf("building the pause image: %v", err)
		return nil
	}
	return idx
}

// startRegistry serves an in-memory OCI registry on the test's loopback and returns its
// host:port.
func startRegistry(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// existing are those of paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// readSysctls reads KubeletSysctls as name=value.
func readSysctls(t *testing.T) []string {
	var out []string
	for _, s := range KubeletSysctls {
		v, err := os.ReadFile(filepath.Join(procSys, s))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s+"="+strings.TrimSpace(string(v)))
	}
	return out
}

// inMountNamespace lists the processes in mount namespace ns ("mnt:[...]").
func inMountNamespace(ns string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && l == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

// measureIdle logs what the idle node (one pod) costs: CPU over a few seconds and memory, from
// its cgroups.
func measureIdle(t *testing.T, n *Node) {
	hs, err := cgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	var cpuacct, memory string
	for _, h := range hs {
		switch {
		case h.v2:
		case h.has("cpuacct"):
			cpuacct = h.dir(n.cfg.Name)
		case h.has("memory"):
			memory = h.dir(n.cfg.Name)
		}
	}
	usage := func() time.Duration {
		b, _ := os.ReadFile(filepath.Join(cpuacct, "cpuacct.usage"))
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns)
	}
	const window = 5 * time.Second
	before := usage()
	time.Sleep(window)
	cpu := usage() - before
	var rss int64
	perComm := map[string]int64{}
	for _, pid := range nodeProcs(hs, n.cfg.Name) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss += pages * int64(os.Getpagesize())
			perComm[testbed.ProcessName(pid)] += pages * int64(os.Getpagesize())
		}
	}
	var each []string
	for c, b := range perComm {
		each = append(each, fmt.Sprintf("%s %d", c, b>>20))
	}
	slices.Sort(each)
	b, _ := os.ReadFile(filepath.Join(memory, "memory.stat"))
	var memRSS int64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "total_rss "); ok {
			memRSS, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	t.Logf("idle node with one pod: %.1f%% of one core over %v; RSS of its processes %d MiB (%s), anonymous memory (memory cgroup total_rss) %d MiB",
		100*cpu.Seconds()/window.Seconds(), window, rss>>20, strings.Join(each, ", "), memRSS>>20)
}
