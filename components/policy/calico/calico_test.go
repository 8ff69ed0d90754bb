package calico_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
)

// Each API the controller can write maps to its group's globalnetworksets.
func TestResource(t *testing.T) {
	for api, want := range map[string]schema.GroupVersionResource{
		calico.APIv3:  {Group: "projectcalico.org", Version: "v3", Resource: "globalnetworksets"},
		calico.APICRD: {Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworksets"},
	} {
		got, err := calico.Resource(api)
		if err != nil {
			t.Fatalf("Resource(%q): %v", api, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Resource(%q) mismatch (-want +got):\n%s", api, diff)
		}
	}
}

func TestResourceRejectsOtherAPIs(t *testing.T) {
	for _, api := range []string{
		"",
		"v1",
		"projectcalico.org",
		"projectcalico.org/v1",
		"crd.projectcalico.org/v3",
		"PROJECTCALICO.ORG/V3",
		"projectcalico.org/v3/",
		"projectcalico.org/v3/globalnetworksets",
		" projectcalico.org/v3",
		"networking.k8s.io/v1",
	} {
		t.Run(api, func(t *testing.T) {
			got, err := calico.Resource(api)
			if err == nil {
				t.Fatalf("Resource(%q) = %v, want an error", api, got)
			}
			if diff := cmp.Diff(schema.GroupVersionResource{}, got); diff != "" {
				t.Errorf("Resource(%q) returned a resource with its error (-want +got):\n%s", api, diff)
			}
		})
	}
}

func set() *calico.GlobalNetworkSet {
	return &calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "gcp-sys-log-forwarder",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "semaphore-policy", "policy.semaphore.uw.io/name": "forwarder"},
			Annotations: map[string]string{"note": "kept"},
		},
		Spec: calico.GlobalNetworkSetSpec{Nets: []string{"10.0.0.1/32", "10.0.0.2/32", "fd00::1/128"}},
	}
}

func TestUnstructuredRoundTrip(t *testing.T) {
	for _, api := range []string{calico.APIv3, calico.APICRD} {
		t.Run(api, func(t *testing.T) {
			in := set()
			u, err := calico.ToUnstructured(in, api)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(api, u.GetAPIVersion()); diff != "" {
				t.Errorf("apiVersion mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(calico.Kind, u.GetKind()); diff != "" {
				t.Errorf("kind mismatch (-want +got):\n%s", diff)
			}
			if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found {
				t.Errorf("metadata.creationTimestamp = %v, want it left out", v)
			}
			if diff := cmp.Diff(in.Labels, u.GetLabels()); diff != "" {
				t.Errorf("labels mismatch (-want +got):\n%s", diff)
			}
			nets, _, err := unstructured.NestedStringSlice(u.Object, "spec", "nets")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in.Spec.Nets, nets); diff != "" {
				t.Errorf("spec.nets mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(set(), in); diff != "" {
				t.Errorf("ToUnstructured changed its input (-want +got):\n%s", diff)
			}

			out, err := calico.FromUnstructured(u)
			if err != nil {
				t.Fatal(err)
			}
			want := set()
			want.APIVersion, want.Kind = api, calico.Kind
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// An object as the API server returns it: server-set metadata and fields we do not model.
func TestFromUnstructuredServerObject(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": calico.APIv3,
		"kind":       calico.Kind,
		"metadata": map[string]any{
			"name":              "gcp-ns-set",
			"uid":               "4f7b2c1e-0000-4000-8000-000000000001",
			"resourceVersion":   "42",
			"creationTimestamp": "2025-01-02T03:04:05Z",
			"labels":            map[string]any{"policy.semaphore.uw.io/name": "set"},
		},
		"spec": map[string]any{"nets": []any{"198.18.0.1/32"}},
	}}
	got, err := calico.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"198.18.0.1/32"}, got.Spec.Nets); diff != "" {
		t.Errorf("nets mismatch (-want +got):\n%s", diff)
	}
	if got.Name != "gcp-ns-set" || got.ResourceVersion != "42" || string(got.UID) != "4f7b2c1e-0000-4000-8000-000000000001" {
		t.Errorf("metadata = %+v, want name, resourceVersion and uid kept", got.ObjectMeta)
	}
	if got.CreationTimestamp.IsZero() {
		t.Error("creationTimestamp lost")
	}
}

func TestFromUnstructuredBadSpec(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": calico.APICRD,
		"kind":       calico.Kind,
		"metadata":   map[string]any{"name": "bad"},
		"spec":       map[string]any{"nets": "10.0.0.1/32"},
	}}
	if got, err := calico.FromUnstructured(u); err == nil {
		t.Errorf("FromUnstructured with nets a string = %+v, want an error", got)
	}
}

func TestToUnstructuredEmptySet(t *testing.T) {
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, calico.APICRD)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found {
		t.Error("metadata.creationTimestamp present, want it left out")
	}
	if diff := cmp.Diff("empty", u.GetName()); diff != "" {
		t.Errorf("name mismatch (-want +got):\n%s", diff)
	}
}

func TestDeepCopy(t *testing.T) {
	orig := set()
	orig.APIVersion, orig.Kind = calico.APIv3, calico.Kind
	cp := orig.DeepCopy()
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Fatalf("DeepCopy mismatch (-want +got):\n%s", diff)
	}
	cp.Labels["policy.semaphore.uw.io/name"] = "changed"
	cp.Labels["new"] = "label"
	cp.Annotations["note"] = "changed"
	cp.Spec.Nets[0] = "192.0.2.1/32"
	cp.Spec.Nets = append(cp.Spec.Nets, "192.0.2.2/32")
	cp.Name = "other"
	cp.APIVersion = calico.APICRD

	want := set()
	want.APIVersion, want.Kind = calico.APIv3, calico.Kind
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
	}
}

func TestDeepCopyEmpty(t *testing.T) {
	orig := &calico.GlobalNetworkSet{}
	cp := orig.DeepCopy()
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Errorf("DeepCopy mismatch (-want +got):\n%s", diff)
	}
}
