package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// A remote pod in its node's network has the node's address, shared by the kubelet and every
// other host-network pod there: it never goes into a set, whatever its labels and although the
// address lies inside the remote's ranges, while a pod with the same labels and an address of
// its own does; a set of host-network pods alone is never made. Each address is logged and
// counted once as host_network, not again on the next sync of its set.
func TestHostNetworkPodsStayOutOfSets(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "aws", "gcp")
	if err := cfg.RemotePodRanges.Decode("gcp:198.18.0.0/16"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "sys-log")
	fwd := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	agents := netset.Source{Cluster: "gcp", Namespace: ns, Name: "agent"}
	pod(t, gcp, ns, "forwarder-0", fwd.Name, "198.18.50.1")
	hostPod(t, gcp, ns, "forwarder-host", fwd.Name, "198.18.60.1", "fd00:60::1")
	hostPod(t, gcp, ns, "agent-host", agents.Name, "198.18.60.2")
	r := start(t, cfg)

	testenv.Eventually(t, 30*time.Second, "the set of the pod with its own address", func() error {
		return setHas(api, fwd, "198.18.50.1/32")
	})
	hostNetwork := func() float64 {
		v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_refused_addresses_total",
			map[string]string{"remote": "gcp", "reason": netset.ReasonHostNetwork})
		return v
	}
	testenv.Eventually(t, 10*time.Second, "host-network addresses counted", func() error {
		if v := hostNetwork(); v != 3 {
			return fmt.Errorf("refused_addresses_total{gcp,host_network} = %v, want 3", v)
		}
		return nil
	})
	if err := setGone(api, agents); err != nil {
		t.Errorf("a set of host-network pods alone: %v", err)
	}
	// What the decision reads survives the informer's transform.
	if p, ok := r.App.Controller().CachedPod("gcp", ns, "forwarder-host"); !ok || !p.Spec.HostNetwork {
		t.Errorf("the cached host-network pod does not say so: %v", p)
	}

	// Another change to the set syncs it again: the same refusals are not counted twice.
	pod(t, gcp, ns, "forwarder-1", fwd.Name, "198.18.50.2")
	testenv.Eventually(t, 30*time.Second, "the new pod in the set", func() error {
		return setHas(api, fwd, "198.18.50.1/32", "198.18.50.2/32")
	})
	if v := hostNetwork(); v != 3 {
		t.Errorf("after another sync, refused_addresses_total{gcp,host_network} = %v, want 3 still", v)
	}
}

// A remote pod is cached without its annotations and managedFields, which a remote may fill up
// to the API server's limits: a pod with a 200 KiB annotation goes into its set like any other,
// and the cache holds only what sets are made of.
func TestRemotePodsAreCachedWithoutTheirAnnotations(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "gcp")
	ns := fixture.Namespace(t, "big")
	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	big := strings.Repeat("x", 200<<10)
	podWith(t, gcp, ns, "annotated", src.Name, func(p *corev1.Pod) {
		p.Annotations = map[string]string{"example.com/blob": big}
	}, "198.18.51.1")
	full, err := gcp.Client.CoreV1().Pods(ns).Get(context.Background(), "annotated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Annotations["example.com/blob"]) != len(big) || len(full.ManagedFields) == 0 {
		t.Fatalf("the remote pod lacks what the test is about: %d bytes of annotation, %d managedFields", len(full.Annotations["example.com/blob"]), len(full.ManagedFields))
	}
	r := start(t, cfg)

	testenv.Eventually(t, 30*time.Second, "the annotated pod's set", func() error { return setHas(api, src, "198.18.51.1/32") })
	cached, ok := r.App.Controller().CachedPod("gcp", ns, "annotated")
	if !ok {
		t.Fatal("the pod is not in the cache")
	}
	if cached.Annotations != nil || cached.ManagedFields != nil || cached.Spec.Containers != nil {
		t.Errorf("the cache keeps what no set is made of: %d annotations, %d managedFields, %d containers",
			len(cached.Annotations), len(cached.ManagedFields), len(cached.Spec.Containers))
	}
	if cached.Labels[cfg.PodLabel] != src.Name || cached.Status.PodIP != "198.18.51.1" || cached.Status.Phase != corev1.PodRunning {
		t.Errorf("the cache lost what sets are made of: labels %v, status %+v", cached.Labels, cached.Status)
	}
}

// overLimit reads semaphore_policy_over_limit{remote, what}.
func overLimit(t *testing.T, r *running, remote, what string) float64 {
	t.Helper()
	v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_over_limit", map[string]string{"remote": remote, "what": what})
	return v
}

// expectOverLimit is nil when over_limit of remote is sets and members.
func expectOverLimit(t *testing.T, r *running, remote string, sets, members float64) error {
	t.Helper()
	if s, m := overLimit(t, r, remote, "sets"), overLimit(t, r, remote, "members"); s != sets || m != members {
		return fmt.Errorf("over_limit{%s}: sets %v, members %v; want %v and %v", remote, s, m, sets, members)
	}
	return nil
}

// Each remote is held to its own limits, the same way whatever order its sets sync in: of the
// sets its pods would make, the first by name are made and of a set's addresses the first by
// address go in; the rest is left out, logged once and shown in over_limit. A set of ours
// beyond the limit is deleted (here one left by an earlier run with a higher limit, never
// written on the way), a set that is not ours is left alone, and the other remote, within its
// limits, is unaffected. A set that comes first by name pushes the last one made out; once it
// goes, that one is made again.
func TestSetsAndMembersBeyondTheLimitsAreLeftOut(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "aws", "gcp")
	cfg.MaxSetsPerRemote, cfg.MaxSetMembers = 2, 2
	ns := fixture.Namespace(t, "limits")
	g := func(name string) netset.Source { return netset.Source{Cluster: "gcp", Namespace: ns, Name: name} }
	a := func(name string) netset.Source { return netset.Source{Cluster: "aws", Namespace: ns, Name: name} }

	// gcp: a (three addresses, one more than a set holds), b, c and d: two sets too many.
	pod(t, gcp, ns, "a-0", "a", "198.18.40.11")
	pod(t, gcp, ns, "a-1", "a", "198.18.40.9")
	pod(t, gcp, ns, "a-2", "a", "198.18.40.10")
	pod(t, gcp, ns, "b-0", "b", "198.18.41.1")
	pod(t, gcp, ns, "c-0", "c", "198.18.42.1")
	pod(t, gcp, ns, "d-0", "d", "198.18.43.1")
	// A set of ours with stale nets: one written on the way would show as an update.
	ours := createSet(t, api, netset.SetName(g("c")), netset.Labels(g("c")), "198.18.42.99/32")
	foreign := createForeignSet(t, api, netset.SetName(g("d")))
	// aws: exactly as many sets and addresses as its limits allow.
	pod(t, aws, ns, "a-0", "a", "198.18.44.1")
	pod(t, aws, ns, "a-1", "a", "198.18.44.2")
	pod(t, aws, ns, "b-0", "b", "198.18.45.1")
	// The audit log only grows: what we write from here on follows what it holds now.
	before := len(local.WritesBut(t, app.Name))
	r := start(t, cfg)

	testenv.Eventually(t, 30*time.Second, "the first sets by name, the first addresses by address", func() error {
		for _, err := range []error{
			setHas(api, g("a"), "198.18.40.9/32", "198.18.40.10/32"),
			setHas(api, g("b"), "198.18.41.1/32"),
			setGone(api, g("c")),
			setHas(api, a("a"), "198.18.44.1/32", "198.18.44.2/32"),
			setHas(api, a("b"), "198.18.45.1/32"),
			expectOverLimit(t, r, "gcp", 2, 1),
			expectOverLimit(t, r, "aws", 0, 0),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if s, err := getSet(api, g("d")); err != nil || s.ResourceVersion != foreign.GetResourceVersion() {
		t.Errorf("the set that is not ours, at the name of a set beyond the limit, changed: %v, %v", s, err)
	}
	wrote := func() map[string][]string {
		out := map[string][]string{}
		for _, e := range local.WritesBut(t, app.Name)[before:] {
			if e.ObjectRef.Resource == "globalnetworksets" && strings.Contains(e.ObjectRef.Name, ns) {
				out[e.ObjectRef.Name] = append(out[e.ObjectRef.Name], e.Verb)
			}
		}
		return out
	}
	for name, want := range map[string][]string{
		netset.SetName(g("a")): {"create"}, netset.SetName(g("b")): {"create"},
		ours.GetName(): {"delete"}, foreign.GetName(): nil,
		netset.SetName(a("a")): {"create"}, netset.SetName(a("b")): {"create"},
	} {
		if got := wrote()[name]; !slices.Equal(got, want) {
			t.Errorf("writes to %s: %v, want %v", name, got, want)
		}
	}

	// A set that comes first by name pushes b out; once it goes, b is back. A pod gone from a
	// lets the third address in.
	aa := pod(t, gcp, ns, "aa-0", "aa", "198.18.46.1")
	testenv.Eventually(t, 30*time.Second, "b pushed out by aa", func() error {
		for _, err := range []error{setHas(api, g("aa"), "198.18.46.1/32"), setGone(api, g("b")), expectOverLimit(t, r, "gcp", 3, 1)} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	for _, name := range []string{aa.Name, "a-1"} {
		if err := gcp.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "b back, a's third address in", func() error {
		for _, err := range []error{
			setGone(api, g("aa")), setHas(api, g("b"), "198.18.41.1/32"),
			setHas(api, g("a"), "198.18.40.10/32", "198.18.40.11/32"), setGone(api, g("c")),
			expectOverLimit(t, r, "gcp", 2, 0),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err := expectOverLimit(t, r, "aws", 0, 0); err != nil {
		t.Error(err)
	}
}
