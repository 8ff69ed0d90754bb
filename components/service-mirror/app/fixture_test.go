package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
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
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// The clusters are shared by every test of the package: starting three API servers takes
// seconds. Tests stay independent by using their own remote namespaces and their own local
// mirror namespace, and run one at a time (outage tests cut a shared remote).
var (
	clusters *fixture.Clusters
	local    *testenv.Cluster
	aws      *testenv.Cluster
	gcp      *testenv.Cluster
)

const mirrorLabel = "mirror.semaphore.uw.io/mirror-service"

// testLabel carries, on every remote Service a test creates with remoteService, a value unique
// to the test, and the test's controllers select on it too. The remotes are shared by every
// test of the package and a controller watches all of a remote's namespaces: without this, one
// test's controller would also mirror whatever other tests left behind, and counts (mirrors,
// writes, drift) would depend on the order tests run in.
const testLabel = "semaphore.test/name"

func testLabelValue(t *testing.T) string { return fixture.Namespace(t, "t") }

func TestMain(m *testing.M) {
	// Remotes are dual-stack, the local cluster is IPv4 only, as many real ones are.
	// Every cluster serves the Multi-Cluster Services API, from the CRDs the chart installs,
	// and the About API's ClusterProperty, which clusters' IDs are read from.
	crds := []string{testbed.MCSCRDs(), testbed.ClusterPropertyCRDs()}
	opts := fixture.Options{
		Local: testenv.Options{Audit: true, CRDDirs: crds},
		AWS:   testenv.Options{ServiceCIDRs: "10.1.0.0/16,fd00:1::/108", CRDDirs: crds},
		GCP:   testenv.Options{ServiceCIDRs: "10.2.0.0/16,fd00:2::/108", CRDDirs: crds},
	}
	os.Exit(fixture.Main(m, "semaphore-mirror-test-", opts, func(c *fixture.Clusters) error {
		clusters, local, aws, gcp = c, c.Local, c.AWS, c.GCP
		return nil
	}))
}

// newConfig returns a valid configuration for a controller in the local cluster with its own
// mirror namespace, which it creates.
func newConfig(t *testing.T, remotes ...string) app.Config {
	t.Helper()
	ns := fixture.Namespace(t, "mirrors")
	if err := local.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		Elected:              clusters.Elected(fixture.LeaderElection(ns, ""), remotes...),
		Namespace:            ns,
		LabelSelector:        mirrorLabel + "=true," + testLabel + "=" + testLabelValue(t),
		Workers:              4,
		DriftInterval:        200 * time.Millisecond,
		MCSClusterIDInterval: 200 * time.Millisecond,
		// The defaults: a struct literal does not get envconfig's.
		MaxServices:       1000,
		GlobalMaxServices: 1000,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type running = fixture.Running[*app.ServiceMirror]

// start runs a controller until stop or the end of the test.
func start(t *testing.T, cfg app.Config) *running {
	t.Helper()
	return fixture.Start(t, cfg.Identity, func(log *slog.Logger) (*app.ServiceMirror, error) { return app.New(cfg, log) })
}

// startWith is start with cfg changed by change.
func startWith(t *testing.T, cfg app.Config, change func(*app.Config)) *running {
	t.Helper()
	change(&cfg)
	return start(t, cfg)
}

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
	return localService(cfg, mirror.ServiceName(src))
}

// localService returns the Service name of the mirror namespace and its slices, or an error.
func localService(cfg app.Config, name string) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	ctx := context.Background()
	svc, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
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
