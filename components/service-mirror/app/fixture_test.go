package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// The clusters are shared by every test of the package: starting three API servers takes
// seconds. Tests stay independent by using their own remote namespaces and their own local
// mirror namespace, and run one at a time (outage tests cut a shared remote).
var (
	local, aws, gcp *testenv.Cluster
	remotesDir      string
)

const mirrorLabel = "mirror.semaphore.uw.io/mirror-service"

// testLabel carries, on every remote Service a test creates with remoteService, a value unique
// to the test, and the test's controllers select on it too. The remotes are shared by every
// test of the package and a controller watches all of a remote's namespaces: without this, one
// test's controller would also mirror whatever other tests left behind, and counts (mirrors,
// writes, drift) would depend on the order tests run in.
const testLabel = "semaphore.test/name"

func testLabelValue(t *testing.T) string { return testNamespace(t, "t") }

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var wg sync.WaitGroup
	var errs [3]error
	dir, err := os.MkdirTemp("", "semaphore-mirror-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Remotes are dual-stack, the local cluster is IPv4 only, as many real ones are.
	wg.Go(func() {
		local, errs[0] = testenv.StartCluster("local", testenv.Options{Audit: true, Dir: filepath.Join(dir, "local")})
	})
	wg.Go(func() {
		aws, errs[1] = testenv.StartCluster("aws", testenv.Options{ServiceCIDRs: "10.1.0.0/16,fd00:1::/108", Dir: filepath.Join(dir, "aws")})
	})
	wg.Go(func() {
		gcp, errs[2] = testenv.StartCluster("gcp", testenv.Options{ServiceCIDRs: "10.2.0.0/16,fd00:2::/108", Dir: filepath.Join(dir, "gcp")})
	})
	wg.Wait()
	for _, c := range []*testenv.Cluster{local, aws, gcp} {
		if c != nil {
			defer c.Stop()
		}
	}
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting API servers:", err)
			return 1
		}
	}
	remotesDir = filepath.Join(dir, "remotes")
	for _, c := range []*testenv.Cluster{aws, gcp} {
		data, err := os.ReadFile(c.Kubeconfig)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(remote.KubeconfigPath(remotesDir, c.Name)), 0o755)
		}
		if err == nil {
			err = os.WriteFile(remote.KubeconfigPath(remotesDir, c.Name), data, 0o600)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// names returns a namespace name unique to the test, usable in every cluster.
func testNamespace(t *testing.T, suffix string) string {
	n := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return strings.Trim(n[:min(len(n), 40)], "-") + "-" + suffix
}

// newConfig returns a valid configuration for a controller in the local cluster with its own
// mirror namespace, which it creates.
func newConfig(t *testing.T, remotes ...string) app.Config {
	t.Helper()
	ns := testNamespace(t, "mirrors")
	if err := local.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		Shared: config.Shared{
			LocalCluster:        "local",
			Remotes:             remotes,
			RemotesDir:          remotesDir,
			LocalKubeconfig:     local.DirectKubeconfig,
			AdminAddr:           "127.0.0.1:0",
			ClientQPS:           200,
			ClientBurst:         400,
			ResyncPeriod:        10 * time.Minute,
			RemoteProbeInterval: 200 * time.Millisecond,
		},
		LeaderElection: config.LeaderElection{
			Enabled:       true,
			Namespace:     ns,
			Identity:      "replica-a",
			LeaseDuration: 4 * time.Second,
			RenewDeadline: 3 * time.Second,
			RetryPeriod:   500 * time.Millisecond,
		},
		Namespace:     ns,
		LabelSelector: mirrorLabel + "=true," + testLabel + "=" + testLabelValue(t),
		Workers:       4,
		DriftInterval: 200 * time.Millisecond,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type running struct {
	*app.App
	*testenv.Background
}

// start runs a controller until stop or the end of the test.
func start(t *testing.T, cfg app.Config) *running {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testenv.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", cfg.Identity)
	a, err := app.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return &running{App: a, Background: testenv.RunInBackground(t, a.Run)}
}

func (r *running) stop() { _ = r.Stop() }

// eventually retries check until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

// metricValue is the sum of the series of name whose labels include labels (0 if none).
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	sum, _ := metricSeries(t, reg, name, labels)
	return sum
}

// metricPresent reports whether a series of name with labels exists: metricValue reads an
// absent series as 0, which a test waiting for a gauge to be 0 must not mistake for a value.
func metricPresent(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) bool {
	t.Helper()
	_, n := metricSeries(t, reg, name, labels)
	return n > 0
}

func metricSeries(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (sum float64, n int) {
	t.Helper()
	return testenv.MetricSeries(t, reg, name, labels)
}

func readyz(t *testing.T, r *running) (int, string) {
	t.Helper()
	return testenv.Readyz(t, r.AdminAddr())
}

// remoteService creates a Service labelled for mirroring (unless labelled is false) in c.
func remoteService(t *testing.T, c *testenv.Cluster, ns, name string, mutate func(*corev1.Service)) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{mirrorLabel: "true", testLabel: testLabelValue(t)}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{
				{Name: "forward", Port: 8888, TargetPort: intstr.FromInt32(24224), Protocol: corev1.ProtocolTCP},
				{Name: "http", Port: 8889, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http")},
			},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	out, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// endpoint is a ready endpoint at addr.
func endpoint(addr string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
}

// remoteSlice creates an EndpointSlice of Service svc in c, as the remote's EndpointSlice
// controller would.
func remoteSlice(t *testing.T, c *testenv.Cluster, ns, svc, name string, family discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: family,
		Endpoints:   eps,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("forward"), Port: ptr.To[int32](24224), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("http")},
		},
	}
	out, err := c.Client.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mirrorOf returns the local mirror Service of the source and its slices, or an error.
func mirrorOf(cfg app.Config, src mirror.Source) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	ctx := context.Background()
	svc, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, mirror.ServiceName(src), metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	slices, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name,
	})
	if err != nil {
		return nil, nil, err
	}
	return svc, slices.Items, nil
}

// mirrorGone is nil when neither the mirror Service of src nor any of its slices exist.
func mirrorGone(cfg app.Config, src mirror.Source) error {
	svc, slices, err := mirrorOf(cfg, src)
	if err != nil {
		ls, lerr := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(context.Background(), metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + mirror.ServiceName(src),
		})
		if lerr != nil {
			return lerr
		}
		if len(ls.Items) > 0 {
			return fmt.Errorf("%d slices left", len(ls.Items))
		}
		return nil
	}
	return fmt.Errorf("mirror %s still exists with %d slices", svc.Name, len(slices))
}

// endpointsOf flattens slices into "address ready" strings, sorted by the slices' order.
func addressesOf(slices []discoveryv1.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a] = ptr.Deref(e.Conditions.Ready, false)
			}
		}
	}
	return out
}

func intOrString(i int32) intstr.IntOrString   { return intstr.FromInt32(i) }
func intOrStringS(s string) intstr.IntOrString { return intstr.FromString(s) }
