package app_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/resilience"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// TestResilience runs the resilience suite against semaphore-policy: a source is the pods of
// a remote namespace with one value of the policy label, one pod a member; its local object is
// its GlobalNetworkSet.
func TestResilience(t *testing.T) {
	resilience.Run(t, resilience.Component[app.Config]{
		MetricsPrefix:    app.MetricsPrefix,
		Queue:            "policy",
		Clusters:         clusters,
		ObjectsPerSource: 1,
		RemoteSeries:     []string{"sets"},

		Config:   func(t *testing.T, remotes ...string) app.Config { return newConfig(t, calico.APIv3, remotes...) },
		Election: func(cfg *app.Config) *config.LeaderElection { return &cfg.LeaderElection },
		Start: func(t *testing.T, cfg app.Config) *resilience.Instance {
			r := start(t, cfg)
			return &resilience.Instance{Registry: r.App.Registry, AdminAddr: r.App.AdminAddr(), Stop: r.Stop}
		},

		Namespace: func(t *testing.T, c *testenv.Cluster, suffix string) string {
			ns := fixture.Namespace(t, suffix)
			if err := c.EnsureNamespace(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			return ns
		},
		Create:   rsCreatePods,
		Change:   rsChangePods,
		Delete:   func(t *testing.T, src resilience.Source) { rsChangePods(t, src) },
		InRemote: func(src resilience.Source) error { return rsRemoteHas(src) },

		Has: func(cfg app.Config, src resilience.Source, members ...string) error {
			return setHas(cfg.CalicoAPI, src, rsNets(members)...)
		},
		Gone: func(cfg app.Config, src resilience.Source) error { return setGone(cfg.CalicoAPI, src) },
		Versions: func(t *testing.T, cfg app.Config, remote string) map[string]string {
			return rsSetVersions(t, cfg.CalicoAPI, remote)
		},
		Owns: func(src resilience.Source, key string) (bool, bool) {
			ours := key == netset.SetName(src)
			return ours, ours
		},
		Writes: func(t *testing.T, _ app.Config) testenv.AuditEvents { return local.WritesBut(t, app.Name) },
		Key: func(e testenv.AuditEvent) string {
			if e.ObjectRef.Resource != "globalnetworksets" {
				return ""
			}
			return e.ObjectRef.Name
		},
		InSync:  rsInventory,
		Varied:  rsVaried,
		Foreign: rsForeignSet,
	})
}

// rsPodName is the name of the pod of src that has the addresses of member.
func rsPodName(src resilience.Source, member string) string {
	return strings.Trim(src.Name+"-"+strings.NewReplacer(".", "-", ":", "-", ",", "-").Replace(member), "-")
}

// rsCreatePods creates a running pod of src for each member.
func rsCreatePods(t *testing.T, src resilience.Source, members ...string) {
	t.Helper()
	for _, m := range members {
		pod(t, clusters.Remote(src.Cluster), src.Namespace, rsPodName(src, m), src.Name, strings.Split(m, ",")...)
	}
}

// rsChangePods gives src a pod for each member and no other: it deletes the pods of members
// not given and creates those of members it lacks. The admin client it uses bypasses the
// proxy: the controller cannot see the change while the proxy is cut.
func rsChangePods(t *testing.T, src resilience.Source, members ...string) {
	t.Helper()
	c := clusters.Remote(src.Cluster)
	ctx := context.Background()
	pods, err := c.Client.CoreV1().Pods(src.Namespace).List(ctx, metav1.ListOptions{LabelSelector: netset.LabelName + "=" + src.Name})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, p := range pods.Items {
		var ips []string
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		m := strings.Join(ips, ",")
		if slices.Contains(members, m) {
			have = append(have, m)
			continue
		}
		if err := c.Client.CoreV1().Pods(src.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	rsCreatePods(t, src, slices.DeleteFunc(slices.Clone(members), func(m string) bool { return slices.Contains(have, m) })...)
}

// rsRemoteHas is nil when src still has pods in its remote.
func rsRemoteHas(src resilience.Source) error {
	pods, err := clusters.Remote(src.Cluster).Client.CoreV1().Pods(src.Namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: netset.LabelName + "=" + src.Name})
	if err == nil && len(pods.Items) == 0 {
		err = fmt.Errorf("no pods of %s left", src)
	}
	return err
}

// rsNets are the nets of a set of pods with the addresses of members, in the set's order.
func rsNets(members []string) []string {
	var addrs []netip.Addr
	for _, m := range members {
		for _, a := range strings.Split(m, ",") {
			addrs = append(addrs, netip.MustParseAddr(a))
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = netip.PrefixFrom(a, a.BitLen()).String()
	}
	return out
}

// rsInventory is nil when the leader's inventory shows n sets of remote.
func rsInventory(t *testing.T, r *resilience.Instance, remote string, n int) error {
	t.Helper()
	sets := app.MetricsPrefix + "_sets"
	v, series := testenv.MetricSeries(t, r.Registry, sets, map[string]string{"remote": remote})
	if series == 0 {
		return fmt.Errorf("no %s series for %s yet", sets, remote)
	}
	if v != float64(n) {
		return fmt.Errorf("sets{remote=%s} = %v, want %d", remote, v, n)
	}
	return nil
}

// rsSetVersions returns name → "uid/resourceVersion" of the sets of ours in api that stand
// for pods of remote.
func rsSetVersions(t *testing.T, api, remote string) map[string]string {
	t.Helper()
	res, _ := calico.Resource(api)
	list, err := dyn.Resource(res).List(context.Background(), metav1.ListOptions{
		LabelSelector: ownership.ManagedBy + "=" + ownership.Policy + "," + netset.LabelCluster + "=" + remote,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, u := range list.Items {
		out[u.GetName()] = string(u.GetUID()) + "/" + u.GetResourceVersion()
	}
	return out
}

// rsVaried makes sets of every shape in the CRD group (the other cases write
// projectcalico.org/v3): several pods, dual-stack pods in either address order, a label value
// that is no valid object name (the set's name is cleaned and hashed), a pod that has
// finished, one without an address yet, and one without the label.
func rsVaried(t *testing.T, cfg *app.Config) resilience.Varied {
	cfg.CalicoAPI = calico.APICRD
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	api := cfg.CalicoAPI
	nsA := fixture.Namespace(t, "src-a")
	nsG := fixture.Namespace(t, "src-g")
	web := netset.Source{Cluster: "aws", Namespace: nsA, Name: "web"}
	dual := netset.Source{Cluster: "aws", Namespace: nsA, Name: "dual"}
	batch := netset.Source{Cluster: "aws", Namespace: nsA, Name: "Batch_Jobs"}
	db := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "db"}

	pod(t, aws, nsA, "web-0", web.Name, "198.18.30.1")
	pod(t, aws, nsA, "web-1", web.Name, "198.18.30.2")
	pod(t, aws, nsA, "web-2", web.Name, "198.18.30.3")
	pod(t, aws, nsA, "dual-0", dual.Name, "198.18.31.1", "fd00:31::1")
	pod(t, aws, nsA, "dual-1", dual.Name, "fd00:31::2", "198.18.31.2")
	pod(t, aws, nsA, "batch-0", batch.Name, "198.18.32.1")
	done := pod(t, aws, nsA, "batch-done", batch.Name, "198.18.32.9")
	setPodStatus(t, aws, done, corev1.PodSucceeded, "198.18.32.9")
	pod(t, aws, nsA, "batch-pending", batch.Name)
	pod(t, aws, nsA, "unlabelled", "", "198.18.39.1")
	pod(t, gcp, nsG, "db-0", db.Name, "fd00:33::1")
	pod(t, gcp, nsG, "db-1", db.Name, "198.18.33.1")

	return resilience.Varied{
		Converged: func() error {
			for _, err := range []error{
				setHas(api, web, "198.18.30.1/32", "198.18.30.2/32", "198.18.30.3/32"),
				setHas(api, dual, "198.18.31.1/32", "198.18.31.2/32", "fd00:31::1/128", "fd00:31::2/128"),
				setHas(api, batch, "198.18.32.1/32"),
				setHas(api, db, "198.18.33.1/32", "fd00:33::1/128"),
			} {
				if err != nil {
					return err
				}
			}
			return nil
		},
		PerRemote: map[string]int{"aws": 3, "gcp": 1},
		Creates:   4,
	}
}

// rsForeignSet creates a set that carries the labels of src but not our managed-by label: not
// ours, so it must survive the garbage collection of the sets of its remote.
func rsForeignSet(t *testing.T, cfg app.Config, src resilience.Source) func() error {
	t.Helper()
	foreign := src
	l := netset.Labels(foreign)
	delete(l, ownership.ManagedBy)
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: netset.SetName(foreign), Labels: l},
		Spec:       calico.GlobalNetworkSetSpec{Nets: []string{"192.0.2.0/24"}},
	}, cfg.CalicoAPI)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := calico.Resource(cfg.CalicoAPI)
	made, err := dyn.Resource(res).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(res).Delete(context.Background(), made.GetName(), metav1.DeleteOptions{}) })
	return func() error {
		got, err := dyn.Resource(res).Get(context.Background(), made.GetName(), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("foreign set: %w", err)
		}
		if got.GetResourceVersion() != made.GetResourceVersion() {
			return fmt.Errorf("foreign set %s was modified", got.GetName())
		}
		return nil
	}
}
