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

	"github.com/kube-semaphore/semaphore/internal/images"
	"github.com/kube-semaphore/semaphore/internal/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/internal/testenv"
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
// that nothing of it is left.
func TestNode(t *testing.T) {
	testenv.RequireNamespaces(t)
	requireNodeSupport(t)
	began := time.Now()
	// The checks' failures, said again after the daemons' logs that a failure prints: the end
	// of the output is what a CI report shows.
	var failures []string
	errorf := func(format string, args ...any) {
		t.Helper()
		failures = append(failures, fmt.Sprintf(format, args...))
		t.Errorf(format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ctxTimeout)
	defer cancel()

	// What a run that crashed may have left: the node's processes and cgroups, and the
	// sysctls kubelet set (the values from before are in sysctlsFile).
	if err := Cleanup(testNode); err != nil {
		t.Fatal(err)
	}
	sysctlsFile := filepath.Join(os.TempDir(), "semaphore-lab-node-test-sysctls.json")
	if err := RestoreSysctls(sysctlsFile); err != nil {
		t.Fatal(err)
	}
	// The pause image (the lab's), built while the API server starts.
	imagec := make(chan ggcrv1.ImageIndex, 1)
	go func() { imagec <- buildPause(t) }()
	clusters := testenv.Start(t, testenv.Options{
		ServiceCIDRs: serviceCIDR,
		APIServerFlags: map[string]string{
			"authorization-mode":       "Node,RBAC",
			"enable-admission-plugins": "NodeRestriction",
		},
	}, "c1")
	c := clusters[0]
	pause := <-imagec
	if pause == nil {
		t.FailNow()
	}
	reg := startRegistry(t)
	image := reg + "/lab/pause:test"
	if err := images.Push(context.Background(), image, pause, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: API server up, pause image %s pushed", time.Since(began).Round(time.Millisecond), image)

	makeNetwork(t)
	// A directory of the node's own (as a pod's hostPath of the lab's nodes is).
	privateDir := "/var/lib/semaphore-lab-" + testNode
	mountpointsBefore := existing(machineMountpoints(append(privatePaths, privateDir)))
	api, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiHost := api.Host
	for _, addr := range []string{apiHost, reg} {
		_, stop, err := testbed.ForwardInto(nodeNS, addr, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}

	tmp := t.TempDir()
	kubeletKubeconfig, proxyKubeconfig := filepath.Join(tmp, "kubelet.kubeconfig"), filepath.Join(tmp, "kube-proxy.kubeconfig")
	if err := c.AddUser(kubeletKubeconfig, "system:node:"+testNode, []string{"system:nodes"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.AddUser(proxyKubeconfig, "system:kube-proxy", nil, ""); err != nil {
		t.Fatal(err)
	}
	// No controller allocates pod CIDRs here: the Node exists before kubelet registers.
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{corev1.LabelHostname: testNode}},
		Spec:       corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	sysctlsBefore := readSysctls(t)
	if err := SaveSysctls(sysctlsFile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := RestoreSysctls(sysctlsFile); err != nil {
			t.Error(err)
		}
	})

	cfg := Config{
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
		SandboxImage:    image,
		Dir:             filepath.Join(tmp, "node"),
		LogDir:          logDir(t, tmp),
		BinDir:          os.Getenv(envBinDir),
		PrivateDirs:     []string{privateDir},
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, d := range []string{"containerd", "kubelet", "kube-proxy"} {
				p := filepath.Join(cfg.LogDir, d+"-"+testNode+".log")
				t.Logf("the end of %s:\n%s", p, logTail(p, 40))
			}
			if len(failures) > 0 {
				t.Logf("failed checks (see above):\n%s", strings.Join(failures, "\n"))
			}
		}
	})
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	t.Logf("%v: node started", time.Since(began).Round(time.Millisecond))
	// The node sees Dir/root/<privateDir> at privateDir (and this machine does not).
	if err := os.WriteFile(filepath.Join(cfg.Dir, "root", privateDir, "mine"), []byte(testNode), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s/mine", n.PIDs()[1], privateDir)); err != nil || string(b) != testNode {
		errorf("kubelet does not see the node's %s: %q, %v", privateDir, b, err)
	}
	if _, err := os.Stat(filepath.Join(privateDir, "mine")); err == nil {
		errorf("this machine sees the node's %s", privateDir)
	}

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
	t.Logf("%v: Node Ready", time.Since(began).Round(time.Millisecond))

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
	t.Logf("%v: pod Running at %s", time.Since(began).Round(time.Millisecond), podIP)
	if rtt, err := testbed.Ping(nodeNS, nodeIP, podIP.String(), 2*time.Second); err != nil {
		t.Fatalf("the node cannot reach its pod: %v", err)
	} else {
		t.Logf("ping %s from the node: %v", podIP, rtt)
	}

	// A Service with the pod as its endpoint (no endpoint controller here: the EndpointSlice is
	// written as it would), which kube-proxy must program.
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
	t.Logf("%v: ClusterIP %s programmed", time.Since(began).Round(time.Millisecond), svc.Spec.ClusterIP)

	if testing.Verbose() {
		measureIdle(t, n)
	}

	// Stop: nothing of the node is left.
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
		errorf("only processes %v in the node's cgroup", procs)
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
			errorf("process %d (%s) of the node still runs (state %s)", pid, testbed.ProcessName(pid), state)
		}
	}
	if pids := inMountNamespace(mntNS); len(pids) > 0 {
		errorf("processes %v are still in the node's mount namespace", pids)
	}
	for _, h := range hs {
		if _, err := os.Stat(h.dir(testNode)); !errors.Is(err, fs.ErrNotExist) {
			errorf("cgroup %s is left (%v)", h.dir(testNode), err)
		}
	}
	if _, err := os.Stat(cfg.Dir); !errors.Is(err, fs.ErrNotExist) {
		errorf("%s is left (%v)", cfg.Dir, err)
	}
	if others := nodeCgroups(hs); len(others) == 0 {
		if after := existing(machineMountpoints(append(privatePaths, privateDir))); !slices.Equal(after, mountpointsBefore) {
			errorf("mount points before the node: %v, after: %v", mountpointsBefore, after)
		}
	} else {
		t.Logf("other nodes run on this machine (%v): the mount points stay", others)
	}
	if err := RestoreSysctls(sysctlsFile); err != nil {
		t.Fatal(err)
	}
	if after := readSysctls(t); !slices.Equal(after, sysctlsBefore) {
		errorf("sysctls before the node: %v, after: %v", sysctlsBefore, after)
	}
	t.Logf("%v: all done", time.Since(began).Round(time.Millisecond))
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
