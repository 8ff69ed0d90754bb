package app_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// originalSet creates a set as the original semaphore-policy made it: our name, its labels
// (managed-by=semaphore-policy and the policy.semaphore.uw.io source), no
// app.kubernetes.io/managed-by.
func originalSet(t *testing.T, api string, src netset.Source, nets ...string) *unstructured.Unstructured {
	t.Helper()
	l := netset.Labels(src)
	delete(l, ownership.ManagedBy)
	return createSet(t, api, netset.SetName(src), l, nets...)
}

// Migrating from the original semaphore-policy, step by step: with the original's sets in the
// cluster, our controller started without SEMAPHORE_ADOPT_ORIGINAL leaves them alone (name
// clashes, counted); restarted with it, it takes over the set whose pods still exist in place
// (same UID, our labels and the original's managed-by label, right nets), deletes the one whose
// pods are gone, leaves the one of a cluster it does not read, and then writes nothing.
func TestAdoptsTheOriginalsSets(t *testing.T) { forEachAPI(t, testAdoptsTheOriginalsSets) }

func testAdoptsTheOriginalsSets(t *testing.T, api string) {
	cfg := newConfig(t, api, "gcp")
	ns := fixture.Namespace(t, "x")
	kept := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	gone := netset.Source{Cluster: "gcp", Namespace: ns, Name: "left"}
	elsewhere := netset.Source{Cluster: "merit", Namespace: ns, Name: "forwarder"}
	pod(t, gcp, ns, "a", "forwarder", "198.18.3.1")
	pod(t, gcp, ns, "b", "forwarder", "198.18.3.2")
	before := originalSet(t, api, kept, "198.18.3.1/32")
	originalSet(t, api, gone, "198.18.3.9/32")
	foreign := originalSet(t, api, elsewhere, "198.18.9.1/32")

	off := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "the original's sets counted as clashes", func() error {
		if v, _ := testenv.MetricSeries(t, off.App.Registry, "semaphore_policy_clashes_total", map[string]string{"remote": "gcp"}); v < 1 {
			return fmt.Errorf("clashes_total{gcp} = %v", v)
		}
		return nil
	})
	if got, err := getSet(api, kept); err != nil || got.ResourceVersion != before.GetResourceVersion() {
		t.Fatalf("without SEMAPHORE_ADOPT_ORIGINAL the original's set changed: %v, %v", got, err)
	}
	off.Stop()

	cfg.AdoptOriginal = true
	on := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "the original's set adopted in place, the unwanted one deleted", func() error {
		s, err := getSet(api, kept)
		if err != nil {
			return err
		}
		if s.UID != before.GetUID() {
			return fmt.Errorf("set recreated: uid %s, was %s", s.UID, before.GetUID())
		}
		if want := netset.Labels(kept); !maps.Equal(s.Labels, want) {
			return fmt.Errorf("labels %v, want %v", s.Labels, want)
		}
		if err := setHas(api, kept, "198.18.3.1/32", "198.18.3.2/32"); err != nil {
			return err
		}
		return setGone(api, gone)
	})
	if v, _ := testenv.MetricSeries(t, on.App.Registry, "semaphore_policy_adopted_total", map[string]string{"remote": "gcp"}); v != 2 {
		t.Errorf("adopted_total{gcp} = %v, want 2 (one updated, one deleted)", v)
	}
	res, _ := calico.Resource(api)
	other, err := dyn.Resource(res).Get(context.Background(), foreign.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t.Error("the original's set of merit, a cluster this controller does not read, was deleted")
	case err != nil:
		t.Fatal(err)
	case other.GetResourceVersion() != foreign.GetResourceVersion():
		t.Errorf("the original's set of merit changed: %v", other.GetLabels())
	}
	adopted, err := getSet(api, kept)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Hold(t, 2*time.Second, "nothing written once adopted", func() error {
		s, err := getSet(api, kept)
		if err == nil && s.ResourceVersion != adopted.ResourceVersion {
			err = fmt.Errorf("set rewritten: resourceVersion %s, was %s", s.ResourceVersion, adopted.ResourceVersion)
		}
		return err
	})
}
