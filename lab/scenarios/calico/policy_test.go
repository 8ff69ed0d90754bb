package calico

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	policycalico "github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/guide"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// The page has exactly one yaml block with the policy, and it is a Calico NetworkPolicy of that
// name in the sample workloads' namespace.
func TestThePolicyPageHasOneBlockOfTheNetworkPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), policyDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := guide.BlocksOf(data, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var with []int
	for _, b := range blocks {
		if strings.Contains(b.Text, policyName) {
			with = append(with, b.Line)
		}
	}
	if len(with) != 1 {
		t.Fatalf("%s: %d yaml blocks hold %s (at lines %v), want 1", policyDoc, len(with), policyName, with)
	}
	policy, err := docPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if policy.GetAPIVersion() != policycalico.APIv3 || policy.GetKind() != "NetworkPolicy" || policy.GetName() != policyName || policy.GetNamespace() != layout.SampleNamespace {
		t.Errorf("%s: got %s %s %s/%s, want %s NetworkPolicy %s/%s", policyDoc, policy.GetAPIVersion(), policy.GetKind(), policy.GetNamespace(), policy.GetName(),
			policycalico.APIv3, layout.SampleNamespace, policyName)
	}
}

// Attempts that got no answer in time are timeouts, whether the connection or the answer was
// waited for; a refused connection, a name that does not resolve or an answer is not.
func TestTimeouts(t *testing.T) {
	url := "http://fluentd.sys-log.svc.cluster.aws:8889/"
	headers := `Get "` + url + `": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
	records := []podlog.Record{
		{Msg: "sent", Err: headers},
		{Msg: "sent", Err: `Get "` + url + `": dial tcp 198.18.1.200:8889: i/o timeout`},
		{Msg: "sent", Err: `Get "` + url + `": dial tcp 198.18.1.200:8889: connect: connection refused`},
		{Msg: "sent", Err: `Get "` + url + `": dial tcp: lookup fluentd.sys-log.svc.cluster.aws: no such host`},
		{Msg: "sent", Status: 200, Reply: "served by fluentd-0"},
	}
	n, example := timeouts(records)
	if n != 2 || example != headers {
		t.Errorf("timeouts = %d, %q; want 2, %q", n, example, headers)
	}
}

// The stranger is a forwarder as their Deployment's template makes them, on the node given, without the
// policy label (in no set) and without the forwarders' spread.
func TestStrangerPodIsAForwarderWithoutThePolicyLabel(t *testing.T) {
	ctr := corev1.Container{Name: layout.ForwarderName, Image: "sample", Args: []string{"send", "-url", "http://fluentd.sys-log.svc.cluster.aws:8889/", "-interval", "1s"}}
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": layout.ForwarderName, layout.PolicyLabel: layout.ForwarderName}},
		Spec: corev1.PodSpec{
			Containers:                []corev1.Container{ctr},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname}},
		},
	}
	pod := strangerPod(template, "gcp-node-0")
	if _, ok := pod.Labels[layout.PolicyLabel]; ok || pod.Name != strangerName || pod.Labels["app.kubernetes.io/name"] != strangerName {
		t.Errorf("pod %s has labels %v, want only app.kubernetes.io/name=%s", pod.Name, pod.Labels, strangerName)
	}
	if len(pod.Spec.Containers) != 1 || strings.Join(pod.Spec.Containers[0].Args, " ") != strings.Join(ctr.Args, " ") {
		t.Errorf("containers %+v, want the forwarders' %+v", pod.Spec.Containers, ctr)
	}
	if pod.Spec.NodeSelector[corev1.LabelHostname] != "gcp-node-0" || pod.Spec.TopologySpreadConstraints != nil {
		t.Errorf("node selector %v, spread %v; want gcp-node-0, none", pod.Spec.NodeSelector, pod.Spec.TopologySpreadConstraints)
	}
	if template.Spec.NodeSelector != nil || len(template.Spec.TopologySpreadConstraints) != 1 {
		t.Error("strangerPod changed the forwarders' template")
	}
}

// A set holds an address as its own network, /32 or /128.
func TestSetHolds(t *testing.T) {
	set := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"nets": []any{"198.18.1.7/32", "fd00::7/128"}}}}
	for ip, want := range map[string]bool{"198.18.1.7": true, "fd00::7": true, "198.18.1.8": false, "not an address": false} {
		if got := setHolds(set, ip); got != want {
			t.Errorf("setHolds(%q) = %v, want %v", ip, got, want)
		}
	}
}

// storedSet is the forwarders' set as crd.projectcalico.org/v1 stores it, created at created,
// with labels on the object and annotations.
func storedSet(created time.Time, labels, annotations map[string]string, nets ...any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": policycalico.APICRD, "kind": policycalico.Kind, "spec": map[string]any{"nets": nets}}}
	u.SetName(netset.SetName(forwarderSource))
	u.SetCreationTimestamp(metav1.NewTime(created))
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// The stored set must hold the forwarders' addresses, be older than the switch, and carry the
// labels that make it semaphore-policy's on that API; labels the Calico API server kept only in
// its metadata annotation are named as such.
func TestStoredSetProblems(t *testing.T) {
	switched := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	before := switched.Add(-time.Hour)
	ips := []string{"198.18.2.12", "198.18.1.7"}
	ours := netset.Labels(forwarderSource)
	meta, err := json.Marshal(metav1.ObjectMeta{Labels: ours})
	if err != nil {
		t.Fatal(err)
	}
	inAnnotation := map[string]string{policycalico.MetadataAnnotation: string(meta)}
	for _, tc := range []struct {
		name string
		set  *unstructured.Unstructured
		want []string // what each problem says, in order
	}{
		{"kept", storedSet(before, ours, nil, "198.18.1.7/32", "198.18.2.12/32"), nil},
		{"other nets", storedSet(before, ours, nil, "198.18.1.7/32"), []string{"holds [198.18.1.7/32]"}},
		{"new", storedSet(switched.Add(time.Second), ours, nil, "198.18.1.7/32", "198.18.2.12/32"), []string{"after the switch"}},
		{"labels in the annotation", storedSet(before, nil, inAnnotation, "198.18.1.7/32", "198.18.2.12/32"), nil},
		{"no labels", storedSet(before, nil, nil, "198.18.1.7/32", "198.18.2.12/32"), []string{"name clash) and leaves it alone"}},
	} {
		got := storedSetProblems(tc.set, ips, switched)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %d problems", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q does not say %q", tc.name, got[i], w)
			}
		}
	}
}

// The policy is created the first time, and updated to the page's the next.
func TestCreateOrUpdate(t *testing.T) {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{networkPolicies: "NetworkPolicyList"})
	policy, err := docPolicy()
	if err != nil {
		t.Fatal(err)
	}
	r := client.Resource(networkPolicies).Namespace(policy.GetNamespace())
	changed := policy.DeepCopy()
	if err := unstructured.SetNestedField(changed.Object, "app == 'other'", "spec", "selector"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{{changed, "created"}, {policy, "updated"}} {
		how, err := createOrUpdate(ctx, r, step.obj)
		if err != nil || how != step.want {
			t.Fatalf("createOrUpdate = %q, %v; want %q", how, err, step.want)
		}
	}
	got, err := r.Get(ctx, policyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := unstructured.NestedString(policy.Object, "spec", "selector")
	if selector, _, _ := unstructured.NestedString(got.Object, "spec", "selector"); selector != want {
		t.Errorf("selector %q after the update, want the page's %q", selector, want)
	}
}
