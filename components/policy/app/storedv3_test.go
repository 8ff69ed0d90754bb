package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// A set written through projectcalico.org/v3 is stored by the Calico API server (v3.28 and
// later) as a crd.projectcalico.org/v1 object with its labels in the projectcalico.org/metadata
// annotation only. Switched to crd.projectcalico.org/v1, semaphore-policy still sees it as its
// own set: no name clash, and no write while it is right; a change of pods updates it in place.
func TestASetStoredByTheCalicoAPIServerIsOursThroughCRDs(t *testing.T) {
	cfg := newConfig(t, calico.APICRD, "gcp")
	ns := fixture.Namespace(t, "x")
	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	pod(t, gcp, ns, "a", "forwarder", "198.18.3.1")
	meta, err := json.Marshal(metav1.ObjectMeta{Name: netset.SetName(src), Labels: netset.Labels(src)})
	if err != nil {
		t.Fatal(err)
	}
	stored := createSet(t, calico.APICRD, netset.SetName(src), nil, "198.18.3.1/32")
	stored.SetAnnotations(map[string]string{calico.MetadataAnnotation: string(meta)})
	res, _ := calico.Resource(calico.APICRD)
	stored, err = dyn.Resource(res).Update(context.Background(), stored, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	r := start(t, cfg)
	time.Sleep(2 * time.Second) // a sync would have written by now
	if got, err := getSet(calico.APICRD, src); err != nil || got.ResourceVersion != stored.GetResourceVersion() {
		t.Fatalf("the stored set was written to: %v, %v", got, err)
	}
	if v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_clashes_total", map[string]string{"remote": "gcp"}); v != 0 {
		t.Fatalf("clashes_total{gcp} = %v: the stored set was taken for another's", v)
	}
	pod(t, gcp, ns, "b", "forwarder", "198.18.3.2")
	testenv.Eventually(t, 30*time.Second, "the stored set updated in place", func() error {
		s, err := getSet(calico.APICRD, src)
		if err != nil {
			return err
		}
		if s.UID != stored.GetUID() {
			return fmt.Errorf("set recreated")
		}
		return setHas(calico.APICRD, src, "198.18.3.1/32", "198.18.3.2/32")
	})
}
