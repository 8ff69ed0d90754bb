package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
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
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The clusters are shared by every test of the package; tests run one at a time, use their
// own remote namespaces, and delete the sets they caused when they end. The local cluster
// serves GlobalNetworkSets in both Calico API groups from the CRDs in testdata.
var (
	clusters *fixture.Clusters
	local    *testenv.Cluster
	aws      *testenv.Cluster
	gcp      *testenv.Cluster
	dyn      dynamic.Interface
)

// apis are the two Calico API groups the controller can write.
var apis = []string{calico.APIv3, calico.APICRD}

// forEachAPI runs test as a subtest for each of apis.
func forEachAPI(t *testing.T, test func(t *testing.T, api string)) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { test(t, api) })
	}
}

func TestMain(m *testing.M) {
	crds := testenv.CRDs("policy")
	opts := fixture.Options{Local: testenv.Options{Audit: true, CRDDirs: []string{crds}}}
	os.Exit(fixture.Main(m, "semaphore-policy-test-", opts, func(c *fixture.Clusters) error {
		clusters, local, aws, gcp = c, c.Local, c.AWS, c.GCP
		dyn = dynamic.NewForConfigOrDie(local.Config)
		return local.EnsureNamespace(context.Background(), "semaphore")
	}))
}

// newConfig returns a valid configuration writing to api, with leader election on a Lease of
// its own, and removes every set of ours from both groups when the test ends.
func newConfig(t *testing.T, api string, remotes ...string) app.Config {
	t.Helper()
	cfg := app.Config{
		Elected:           clusters.Elected(fixture.LeaderElection("semaphore", fixture.Namespace(t, "lease")), remotes...),
		PodLabel:          "policy.semaphore.uw.io/name",
		CalicoAPI:         api,
		Workers:           4,
		InventoryInterval: 200 * time.Millisecond,
		MaxSetsPerRemote:  1000,
		MaxSetMembers:     10000,
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
			metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.Policy})
		if err != nil {
			t.Errorf("cleaning up sets: %v", err)
		}
	}
}

type running = fixture.Running[*app.Policy]

// start runs a controller until stop or the end of the test.
func start(t *testing.T, cfg app.Config) *running {
	t.Helper()
	return fixture.Start(t, cfg.Identity, func(log *slog.Logger) (*app.Policy, error) { return app.New(cfg, log) })
}

// pod creates a running pod in c labelled for set (no label when set is empty) with the
// given addresses, set through the status subresource as a kubelet would.
func pod(t *testing.T, c *testenv.Cluster, ns, name, set string, ips ...string) *corev1.Pod {
	t.Helper()
	return podWith(t, c, ns, name, set, nil, ips...)
}

// hostPod is pod for a pod in its node's network (spec.hostNetwork): its addresses are the
// node's.
func hostPod(t *testing.T, c *testenv.Cluster, ns, name, set string, ips ...string) *corev1.Pod {
	t.Helper()
	return podWith(t, c, ns, name, set, func(p *corev1.Pod) { p.Spec.HostNetwork = true }, ips...)
}

// podWith is pod with edit applied to the pod before it is created (nil: none).
func podWith(t *testing.T, c *testenv.Cluster, ns, name, set string, edit func(*corev1.Pod), ips ...string) *corev1.Pod {
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
	if edit != nil {
		edit(p)
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
	return createSet(t, api, name, map[string]string{"owner": "someone-else"}, "192.0.2.0/24")
}

// createSet creates a set named name with labels and nets in api, removed when the test ends.
func createSet(t *testing.T, api, name string, labels map[string]string, nets ...string) *unstructured.Unstructured {
	t.Helper()
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       calico.GlobalNetworkSetSpec{Nets: nets},
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
