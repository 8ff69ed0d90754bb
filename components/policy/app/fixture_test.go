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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// The clusters are shared by every test of the package; tests run one at a time, use their
// own remote namespaces, and delete the sets they caused when they end. The local cluster
// serves GlobalNetworkSets in both Calico API groups from the CRDs in testdata.
var (
	local, aws, gcp *testenv.Cluster
	dyn             dynamic.Interface
	remotesDir      string
)

// apis are the two Calico API groups the controller can write.
var apis = []string{calico.APIv3, calico.APICRD}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "semaphore-policy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	crds := filepath.Join(testenv.RepoRoot(), "components", "policy", "testdata", "crds")
	var wg sync.WaitGroup
	var errs [3]error
	wg.Go(func() {
		local, errs[0] = testenv.StartCluster("local", testenv.Options{Audit: true, CRDDirs: []string{crds}, Dir: filepath.Join(dir, "local")})
	})
	wg.Go(func() { aws, errs[1] = testenv.StartCluster("aws", testenv.Options{Dir: filepath.Join(dir, "aws")}) })
	wg.Go(func() { gcp, errs[2] = testenv.StartCluster("gcp", testenv.Options{Dir: filepath.Join(dir, "gcp")}) })
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
	dyn = dynamic.NewForConfigOrDie(local.Config)
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
	if err := local.EnsureNamespace(context.Background(), "semaphore"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// testNamespace returns a namespace name unique to the test, usable in every cluster.
func testNamespace(t *testing.T, suffix string) string {
	n := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	return strings.Trim(n[:min(len(n), 40)], "-") + "-" + suffix
}

// newConfig returns a valid configuration writing to api, with leader election on a Lease of
// its own, and removes every set of ours from both groups when the test ends.
func newConfig(t *testing.T, api string, remotes ...string) app.Config {
	t.Helper()
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
			Namespace:     "semaphore",
			LeaseName:     testNamespace(t, "lease"),
			Identity:      "replica-a",
			LeaseDuration: 4 * time.Second,
			RenewDeadline: 3 * time.Second,
			RetryPeriod:   500 * time.Millisecond,
		},
		PodLabel:          "policy.semaphore.uw.io/name",
		CalicoAPI:         api,
		Workers:           4,
		InventoryInterval: 200 * time.Millisecond,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteOurSets(t) })
	return cfg
}

// deleteOurSets removes every set semaphore-policy created, in both groups, so that the next
// test starts from an empty local cluster.
func deleteOurSets(t *testing.T) {
	for _, api := range apis {
		res, _ := calico.Resource(api)
		err := dyn.Resource(res).DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: labels.ManagedBy + "=" + labels.Policy})
		if err != nil {
			t.Errorf("cleaning up sets: %v", err)
		}
	}
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

func readyz(t *testing.T, r *running) (int, string) {
	t.Helper()
	return testenv.Readyz(t, r.AdminAddr())
}

// pod creates a running pod in c labelled for set (no label when set is empty) with the
// given addresses, set through the status subresource as a kubelet would.
func pod(t *testing.T, c *testenv.Cluster, ns, name, set string, ips ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "forwarder"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "forwarder", Image: "forwarder:1"}}},
	}
	if set != "" {
		p.Labels["policy.semaphore.uw.io/name"] = set
	}
	p, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	return setPodStatus(t, c, p, corev1.PodRunning, ips...)
}

// setPodStatus sets a pod's phase and addresses.
func setPodStatus(t *testing.T, c *testenv.Cluster, p *corev1.Pod, phase corev1.PodPhase, ips ...string) *corev1.Pod {
	t.Helper()
	p = p.DeepCopy()
	p.Status.Phase = phase
	p.Status.PodIP, p.Status.PodIPs = "", nil
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
	}
	out, err := c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// getSet reads the set of src in api.
func getSet(api string, src netset.Source) (*calico.GlobalNetworkSet, error) {
	res, _ := calico.Resource(api)
	u, err := dyn.Resource(res).Get(context.Background(), netset.SetName(src), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return calico.FromUnstructured(u)
}

// setHas is nil when the set of src holds exactly nets.
func setHas(api string, src netset.Source, nets ...string) error {
	s, err := getSet(api, src)
	if err != nil {
		return err
	}
	if strings.Join(s.Spec.Nets, ",") != strings.Join(nets, ",") {
		return fmt.Errorf("set %s has nets %v, want %v", s.Name, s.Spec.Nets, nets)
	}
	return nil
}

// setGone is nil when the set of src does not exist; a failed read does not count as gone.
func setGone(api string, src netset.Source) error {
	s, err := getSet(api, src)
	switch {
	case err == nil:
		return fmt.Errorf("set %s still exists with nets %v", s.Name, s.Spec.Nets)
	case apierrors.IsNotFound(err):
		return nil
	default:
		return err
	}
}

// createForeignSet creates a set we do not own in api.
func createForeignSet(t *testing.T, api, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}},
		Spec:       calico.GlobalNetworkSetSpec{Nets: []string{"192.0.2.0/24"}},
	}, api)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := calico.Resource(api)
	out, err := dyn.Resource(res).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(res).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return out
}
