package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Labelled pods of gcp/sys-log become GlobalNetworkSet
// gcp-<namespace>-forwarder with the four labels and the pods' addresses as sorted host
// networks without duplicates, in both Calico API groups; aws pods of the same name and
// namespace get their own set.
func TestPodsBecomeNetworkSets(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			cfg := newConfig(t, api, "aws", "gcp")
			ns := fixture.Namespace(t, "sys-log")
			pod(t, gcp, ns, "forwarder-b", "forwarder", "198.18.0.10")
			pod(t, gcp, ns, "forwarder-a", "forwarder", "198.18.0.9")
			// Two pods with one address (one reused while the other's status is stale): listed once.
			pod(t, gcp, ns, "forwarder-reused", "forwarder", "198.18.0.10")
			pod(t, gcp, ns, "unlabelled", "", "198.18.0.99")
			pod(t, aws, ns, "forwarder-x", "forwarder", "198.18.1.1")
			r := start(t, cfg)

			src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
			testenv.Eventually(t, 30*time.Second, "gcp set", func() error {
				return setHas(api, src, "198.18.0.9/32", "198.18.0.10/32")
			})
			set, err := getSet(api, src)
			if err != nil {
				t.Fatal(err)
			}
			if want := "gcp-" + ns + "-forwarder"; set.Name != want {
				t.Errorf("set name %q, want %q", set.Name, want)
			}
			wantLabels := map[string]string{
				ownership.ManagedBy: ownership.Policy,
				// The original's label: selectors written for it keep matching.
				netset.OriginalManagedBy: ownership.Policy,
				netset.LabelCluster:      "gcp",
				netset.LabelNamespace:    ns,
				netset.LabelName:         "forwarder",
			}
			if diff := cmp.Diff(wantLabels, set.Labels); diff != "" {
				t.Errorf("set labels (-want +got):\n%s", diff)
			}
			if set.APIVersion != api || set.Kind != calico.Kind {
				t.Errorf("set is %s %s, want %s %s", set.APIVersion, set.Kind, api, calico.Kind)
			}
			testenv.Eventually(t, 30*time.Second, "aws set", func() error {
				return setHas(api, netset.Source{Cluster: "aws", Namespace: ns, Name: "forwarder"}, "198.18.1.1/32")
			})
			testenv.Eventually(t, 10*time.Second, "inventory metrics", func() error {
				if v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_sets", map[string]string{"remote": "gcp"}); v != 1 {
					return fmt.Errorf("sets{gcp} = %v", v)
				}
				if v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_addresses", map[string]string{"remote": "gcp"}); v != 2 {
					return fmt.Errorf("addresses{gcp} = %v", v)
				}
				return nil
			})
		})
	}
}

// A new pod, a changed address, a deleted pod, a finished pod, a pod
// whose label value changes (it moves to the other set) and a pod whose label is removed are
// all reflected; dual-stack pods contribute both addresses; a set left empty is deleted.
func TestSetsFollowPods(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "gcp")
	ctx := context.Background()
	ns := fixture.Namespace(t, "app")
	a := pod(t, gcp, ns, "a", "forwarder", "198.18.2.1")
	b := pod(t, gcp, ns, "b", "forwarder", "198.18.2.2", "fd00:198:18::2")
	start(t, cfg)
	fwd := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	other := netset.Source{Cluster: "gcp", Namespace: ns, Name: "collector"}
	expect := func(what string, src netset.Source, nets ...string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, func() error { return setHas(api, src, nets...) })
	}
	expect("dual-stack pod", fwd, "198.18.2.1/32", "198.18.2.2/32", "fd00:198:18::2/128")

	c := pod(t, gcp, ns, "c", "forwarder", "198.18.2.3")
	expect("new pod", fwd, "198.18.2.1/32", "198.18.2.2/32", "198.18.2.3/32", "fd00:198:18::2/128")

	a = setPodStatus(t, gcp, a, corev1.PodRunning, "198.18.2.11")
	expect("changed address", fwd, "198.18.2.2/32", "198.18.2.3/32", "198.18.2.11/32", "fd00:198:18::2/128")

	setPodStatus(t, gcp, c, corev1.PodSucceeded, "198.18.2.3")
	expect("finished pod", fwd, "198.18.2.2/32", "198.18.2.11/32", "fd00:198:18::2/128")

	if err := gcp.Client.CoreV1().Pods(ns).Delete(ctx, b.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	expect("deleted pod", fwd, "198.18.2.11/32")

	failed := pod(t, gcp, ns, "d", "collector", "198.18.2.4")
	expect("second set", other, "198.18.2.4/32")
	setPodStatus(t, gcp, failed, corev1.PodFailed, "198.18.2.4")
	testenv.Eventually(t, 30*time.Second, "set of a failed pod deleted", func() error { return setGone(api, other) })

	relabel := func(p *corev1.Pod, value string) {
		t.Helper()
		p, err := gcp.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(p.Labels, "policy.semaphore.uw.io/name")
		} else {
			p.Labels["policy.semaphore.uw.io/name"] = value
		}
		if _, err := gcp.Client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabel(a, "collector")
	expect("pod moved to the other set", other, "198.18.2.11/32")
	testenv.Eventually(t, 30*time.Second, "set left empty deleted", func() error { return setGone(api, fwd) })

	relabel(a, "")
	testenv.Eventually(t, 30*time.Second, "set of an unlabelled pod deleted", func() error { return setGone(api, other) })
}

// A GlobalNetworkSet with the set's name that we did not create is never
// changed or deleted; the clash is logged, counted and recorded as an Event; once it goes,
// our set takes the name.
func TestNameClashLeavesForeignSetsAlone(t *testing.T) {
	api := calico.APICRD
	cfg := newConfig(t, api, "gcp")
	ctx := context.Background()
	ns := fixture.Namespace(t, "x")
	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	foreign := createForeignSet(t, api, netset.SetName(src))
	pod(t, gcp, ns, "a", "forwarder", "198.18.3.1")
	r := start(t, cfg)

	testenv.Eventually(t, 30*time.Second, "clash counted", func() error {
		if v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_clashes_total", map[string]string{"remote": "gcp"}); v < 1 {
			return fmt.Errorf("clashes_total{gcp} = %v", v)
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "clash event", func() error {
		events, err := local.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "NetworkSetNameClash" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == foreign.GetName() {
				return nil
			}
		}
		return fmt.Errorf("no NetworkSetNameClash event for %s among %d events", foreign.GetName(), len(events.Items))
	})
	time.Sleep(time.Second)
	got, err := getSet(api, src)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != foreign.GetResourceVersion() || got.Labels["owner"] != "someone-else" {
		t.Fatalf("foreign set changed: resourceVersion %s (was %s), labels %v", got.ResourceVersion, foreign.GetResourceVersion(), got.Labels)
	}

	res, _ := calico.Resource(api)
	if err := dyn.Resource(res).Delete(ctx, foreign.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "our set after the foreign one left", func() error {
		s, err := getSet(api, src)
		if err != nil {
			return err
		}
		if !ownership.IsManagedBy(s.Labels, ownership.Policy) {
			return fmt.Errorf("labels %v", s.Labels)
		}
		return setHas(api, src, "198.18.3.1/32")
	})
}

// A remote's pods whose addresses it may not publish (a metadata address, addresses outside the
// ranges configured for it) are kept out of its set, so no local policy comes to trust them;
// each is logged and counted once, not again on the next sync; its honest pods are in the set.
func TestAddressesTheRemoteMayNotPublishStayOutOfSets(t *testing.T) {
	cfg := newConfig(t, calico.APICRD, "aws", "gcp")
	if err := cfg.RemotePodRanges.Decode("gcp:198.18.0.0/24,gcp:fd00:18::/64"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "sys-log")
	pod(t, gcp, ns, "honest", "forwarder", "198.18.0.20", "fd00:18::20")
	pod(t, gcp, ns, "metadata", "forwarder", "169.254.169.254")
	pod(t, gcp, ns, "elsewhere", "forwarder", "198.18.1.20")
	pod(t, gcp, ns, "elsewhere-v6", "forwarder", "198.18.0.21", "fd00:19::21")
	r := start(t, cfg)

	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	testenv.Eventually(t, 30*time.Second, "set of the honest addresses", func() error {
		return setHas(calico.APICRD, src, "198.18.0.20/32", "198.18.0.21/32", "fd00:18::20/128")
	})
	refused := func(reason string) float64 {
		v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_refused_addresses_total", map[string]string{"remote": "gcp", "reason": reason})
		return v
	}
	testenv.Eventually(t, 10*time.Second, "refusals counted", func() error {
		if special, outside := refused(addrguard.ReasonSpecial), refused(addrguard.ReasonOutsideRanges); special != 1 || outside != 2 {
			return fmt.Errorf("refused: %v special, %v outside the ranges; want 1 and 2", special, outside)
		}
		return nil
	})
	// Another change to the set syncs it again: the same refusals are not counted twice.
	pod(t, gcp, ns, "honest-2", "forwarder", "198.18.0.22")
	testenv.Eventually(t, 30*time.Second, "the new pod in the set", func() error {
		return setHas(calico.APICRD, src, "198.18.0.20/32", "198.18.0.21/32", "198.18.0.22/32", "fd00:18::20/128")
	})
	if special, outside := refused(addrguard.ReasonSpecial), refused(addrguard.ReasonOutsideRanges); special != 1 || outside != 2 {
		t.Errorf("after another sync, refused: %v special, %v outside the ranges; want 1 and 2 still", special, outside)
	}
}
