package clustertest

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// CalicoCRDs is the directory of the Calico CRDs that serve GlobalNetworkSets in the
// crd.projectcalico.org/v1 API (for testenv.Options.CRDDirs).
func CalicoCRDs() string {
	return filepath.Join(testbed.RepoRoot(), "components", "policy", "testdata", "crds")
}

// Create creates each of objs in c (Services, EndpointSlices, Pods, Nodes, GlobalNetworkSets
// in the CRD API, and the Multi-Cluster Services API's ServiceExports, with their status, and
// ServiceImports) and updates it to what the API server made of it. An object created before
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
		case *mcsv1beta1.ServiceExport:
			err = createServiceExport(ctx, c, o)
		case *mcsv1beta1.ServiceImport:
			err = createServiceImport(ctx, c, o)
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

// createServiceExport creates se and then writes its status, as the service mirror would.
func createServiceExport(ctx context.Context, c *testenv.Cluster, se *mcsv1beta1.ServiceExport) error {
	client, err := mcscontroller.NewClient(c.Config)
	if err != nil {
		return err
	}
	exports := client.MulticlusterV1beta1().ServiceExports(se.Namespace)
	status := se.Status
	if err := keep(se)(exports.Create(ctx, se, metav1.CreateOptions{})); err != nil || len(status.Conditions) == 0 {
		return err
	}
	se.Status = status
	return keep(se)(exports.UpdateStatus(ctx, se, metav1.UpdateOptions{}))
}

func createServiceImport(ctx context.Context, c *testenv.Cluster, si *mcsv1beta1.ServiceImport) error {
	client, err := mcscontroller.NewClient(c.Config)
	if err != nil {
		return err
	}
	return keep(si)(client.MulticlusterV1beta1().ServiceImports(si.Namespace).Create(ctx, si, metav1.CreateOptions{}))
}

// ServiceExport is the ServiceExport of namespace/name with the conditions the service mirror
// sets on it when its namespace has the Service svc (nil for none) and the clusters' exports
// merge into imp (nil when none is valid), with the ServiceImport written.
func ServiceExport(namespace, name string, svc *corev1.Service, imp *mcs.Import) *mcsv1beta1.ServiceExport {
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	merged := mcs.Import{}
	if imp != nil {
		merged = *imp
	}
	se.Status.Conditions, _ = mcs.SetConditions(nil, mcs.Conditions(mcs.Export{Service: svc}, merged, imp != nil, imp != nil), 1)
	return se
}

// MultiClusterService creates in c what the service mirror makes of the exported Service k,
// whose exports merge into imp, and returns its ServiceImport: for a ClusterSetIP import the
// derived Service, whose address the import takes; the ServiceImport; and the imported copies
// of the slices of each cluster (slices by cluster).
func MultiClusterService(t testing.TB, c *testenv.Cluster, k mcs.Key, imp mcs.Import, slices map[string][]*discoveryv1.EndpointSlice) *mcsv1beta1.ServiceImport {
	t.Helper()
	var derived *corev1.Service
	if imp.Spec.Type == mcsv1beta1.ClusterSetIP {
		derived = mcs.DerivedService(k, imp)
		Create(t, c, derived)
	}
	si := mcs.ServiceImport(k, imp, derived)
	Create(t, c, si)
	for cluster, s := range slices {
		for _, copied := range mcs.EndpointSlices(k, imp, cluster, cluster, s) {
			Create(t, c, copied)
		}
	}
	return si
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
