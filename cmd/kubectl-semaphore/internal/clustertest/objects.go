package clustertest

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// CalicoCRDs is the directory of the Calico CRDs that serve GlobalNetworkSets in the
// crd.projectcalico.org/v1 API (for testenv.Options.CRDDirs).
func CalicoCRDs() string {
	return filepath.Join(testbed.RepoRoot(), "components", "policy", "testdata", "crds")
}

// Create creates each of objs in c (Services, EndpointSlices, Pods, Nodes, and GlobalNetworkSets
// in the CRD API) and updates it to what the API server made of it. An object created before
// and deleted since may be created again: its resourceVersion is dropped.
func Create(t testing.TB, c *testenv.Cluster, objs ...any) {
	t.Helper()
	ctx := context.Background()
	create := metav1.CreateOptions{}
	for _, obj := range objs {
		if m, ok := obj.(metav1.Object); ok {
			m.SetResourceVersion("")
		}
		var err error
		switch o := obj.(type) {
		case *corev1.Service:
			err = keep(o)(c.Client.CoreV1().Services(o.Namespace).Create(ctx, o, create))
		case *discoveryv1.EndpointSlice:
			err = keep(o)(c.Client.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, create))
		case *corev1.Pod:
			err = keep(o)(c.Client.CoreV1().Pods(o.Namespace).Create(ctx, o, create))
		case *corev1.Node:
			err = keep(o)(c.Client.CoreV1().Nodes().Create(ctx, o, create))
		case *calico.GlobalNetworkSet:
			err = createNetworkSet(ctx, c, o)
		default:
			t.Fatalf("create %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// keep returns a function that takes what a request returns: on success, it copies the object
// the API server made into obj.
func keep[T any](obj *T) func(*T, error) error {
	return func(made *T, err error) error {
		if err == nil {
			*obj = *made
		}
		return err
	}
}

func createNetworkSet(ctx context.Context, c *testenv.Cluster, set *calico.GlobalNetworkSet) error {
	gvr, err := calico.Resource(calico.APICRD)
	if err != nil {
		return err
	}
	u, err := calico.ToUnstructured(set, calico.APICRD)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if u, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return err
	}
	return keep(set)(calico.FromUnstructured(u))
}

// NetworkSet is the GlobalNetworkSet semaphore-policy makes of the pods of src with the
// addresses nets.
func NetworkSet(src netset.Source, nets ...string) *calico.GlobalNetworkSet {
	return &calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: netset.SetName(src), Labels: netset.Labels(src)},
		Spec:       calico.GlobalNetworkSetSpec{Nets: nets},
	}
}

// Mirror creates in c what semaphore-service-mirror makes, in namespace semaphore, of the
// Service svc of remote cluster with its slices: the mirror Service, which it returns, and the
// mirrors of the slices.
func Mirror(t testing.TB, c *testenv.Cluster, cluster string, svc *corev1.Service, slices ...*discoveryv1.EndpointSlice) *corev1.Service {
	t.Helper()
	src := mirror.Source{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name}
	m := mirror.Service(src, "semaphore", svc)
	Create(t, c, m)
	for _, s := range mirror.EndpointSlices(src, "semaphore", slices) {
		Create(t, c, s)
	}
	return m
}

// GlobalService creates in c what semaphore-service-mirror makes, in namespace semaphore, of
// global service key: its Service, as svc of cluster defines it, and a copy of each slice of
// each cluster (slices by cluster). It returns the copies.
func GlobalService(t testing.TB, c *testenv.Cluster, key global.Key, cluster string, svc *corev1.Service, slices map[string][]*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	t.Helper()
	Create(t, c, global.Service(key, "semaphore", global.DefinitionOf(cluster, svc)))
	var out []*discoveryv1.EndpointSlice
	for from, s := range slices {
		for _, copied := range global.EndpointSlices(key, "semaphore", from, s, nil) {
			Create(t, c, copied)
			out = append(out, copied)
		}
	}
	return out
}

// ComponentPod creates in c a pod of comp on node, as its workload's controller would; no
// kubelet runs it, so its status is what the test sets (UpdatePodStatus).
func ComponentPod(t testing.TB, c *testenv.Cluster, comp release.Component, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: comp.Namespace, Labels: comp.Template.Labels},
		Spec:       *comp.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	Create(t, c, pod)
	return pod
}

// UpdatePodStatus writes the status of pod, as a kubelet would, and updates pod to what the API
// server made of it.
func UpdatePodStatus(t testing.TB, c *testenv.Cluster, pod *corev1.Pod) {
	t.Helper()
	if err := keep(pod)(c.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})); err != nil {
		t.Fatal(err)
	}
}
