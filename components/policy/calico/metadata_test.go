package calico_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
)

func storedSet(labels map[string]string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(calico.APICRD)
	u.SetKind(calico.Kind)
	u.SetName("gcp-sys-log-forwarder")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// A set the Calico API server stored carries its labels in an annotation only: read through
// crd.projectcalico.org/v1, it is seen with them, as Calico's own clients see it.
func TestLiftLabelsGivesAStoredV3SetTheLabelsItWasWrittenWith(t *testing.T) {
	u := storedSet(map[string]string{"projectcalico.org/own": "kept"}, map[string]string{
		calico.MetadataAnnotation: `{"labels":{"policy.semaphore.uw.io/cluster":"gcp","projectcalico.org/own":"annotation's"},"creationTimestamp":null}`,
	})
	out, err := calico.LiftLabels(u)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"policy.semaphore.uw.io/cluster": "gcp", "projectcalico.org/own": "annotation's"}
	if got := out.(*unstructured.Unstructured).GetLabels(); !reflect.DeepEqual(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// A set written through crd.projectcalico.org/v1, or an annotation Calico could not read
// either, leaves the object's own labels as they are.
func TestLiftLabelsLeavesOtherSetsAlone(t *testing.T) {
	for name, u := range map[string]*unstructured.Unstructured{
		"no annotation":  storedSet(map[string]string{"a": "1"}, nil),
		"bad annotation": storedSet(map[string]string{"a": "1"}, map[string]string{calico.MetadataAnnotation: "{"}),
	} {
		out, err := calico.LiftLabels(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*unstructured.Unstructured).GetLabels(); !reflect.DeepEqual(got, map[string]string{"a": "1"}) {
			t.Errorf("%s: labels %v", name, got)
		}
	}
}
