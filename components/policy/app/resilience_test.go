package app_test

// Resilience tests: remote outages, restarts, removed remotes and leader election, against the
// real API servers of the package fixture.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// The helpers of this file start with rs so they never clash with those of other test files
// of the package.

const (
	rsRemoteUp   = app.MetricsPrefix + "_remote_up"
	rsLastSync   = app.MetricsPrefix + "_remote_last_sync_timestamp_seconds"
	rsSets       = app.MetricsPrefix + "_sets"
	rsWrites     = app.MetricsPrefix + "_writes_total"
	rsReconciles = app.MetricsPrefix + "_reconcile_total"
	rsQueueDepth = app.MetricsPrefix + "_workqueue_depth"
)

// The reflectors of an informer back off exponentially (up to 30–60 s) while their API server
// is away, so recovering from an outage can take a while after the remote is back.
const rsRecovery = 60 * time.Second

// rsMetric is the sum of the series of name in r's registry whose labels include l (0 if none).
func rsMetric(t *testing.T, r *running, name string, l map[string]string) float64 {
	t.Helper()
	sum, _ := testenv.MetricSeries(t, r.Registry, name, l)
	return sum
}

// rsMetricPresent reports whether a series of name with labels l exists: rsMetric reads an
// absent series as 0, which a test waiting for a gauge to be 0 must not mistake for a value.
func rsMetricPresent(t *testing.T, r *running, name string, l map[string]string) bool {
	t.Helper()
	_, n := testenv.MetricSeries(t, r.Registry, name, l)
	return n > 0
}

func rsRemote(name string) map[string]string { return map[string]string{"remote": name} }

// rsUp is nil when remote_up{remote} is want.
func rsUp(t *testing.T, r *running, remote string, want float64) error {
	t.Helper()
	if v := rsMetric(t, r, rsRemoteUp, rsRemote(remote)); v != want {
		return fmt.Errorf("remote_up{remote=%s} = %v, want %v", remote, v, want)
	}
	return nil
}

// rsReady is nil when /readyz answers 200.
func rsReady(t *testing.T, r *running) error {
	t.Helper()
	code, body := readyz(t, r)
	if code != 200 {
		return fmt.Errorf("/readyz: %d %s", code, body)
	}
	return nil
}

// rsNotReadyFor is nil when /readyz answers 503 with the check of each remote in down failing
// and that of each remote in up passing.
func rsNotReadyFor(t *testing.T, r *running, down []string, up ...string) error {
	t.Helper()
	code, body := readyz(t, r)
	if code != 503 {
		return fmt.Errorf("/readyz: %d %s", code, body)
	}
	for _, d := range down {
		if !strings.Contains(body, "[-]remote:"+d) {
			return fmt.Errorf("/readyz does not name remote:%s as failing: %s", d, body)
		}
	}
	for _, u := range up {
		if !strings.Contains(body, "[+]remote:"+u+" ok") {
			return fmt.Errorf("/readyz does not show remote:%s as ok: %s", u, body)
		}
	}
	return nil
}

// rsInventory is nil when the leader's inventory shows want sets of each remote.
func rsInventory(t *testing.T, r *running, want map[string]int) error {
	t.Helper()
	for remote, n := range want {
		if !rsMetricPresent(t, r, rsSets, rsRemote(remote)) {
			return fmt.Errorf("no %s series for %s yet", rsSets, remote)
		}
		if v := rsMetric(t, r, rsSets, rsRemote(remote)); v != float64(n) {
			return fmt.Errorf("sets{remote=%s} = %v, want %d", remote, v, n)
		}
	}
	return nil
}

// rsSetVersions returns name → "uid/resourceVersion" of the sets of ours in api that stand
// for pods of remote.
func rsSetVersions(t *testing.T, api, remote string) map[string]string {
	t.Helper()
	res, _ := calico.Resource(api)
	list, err := dyn.Resource(res).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.ManagedBy + "=" + labels.Policy + "," + netset.LabelCluster + "=" + remote,
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

// rsAll is nil when every check is.
func rsAll(checks ...func() error) func() error {
	return func() error {
		for _, c := range checks {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

func rsHas(api string, src netset.Source, nets ...string) func() error {
	return func() error { return setHas(api, src, nets...) }
}

// rsLeads is nil when id holds cfg's Lease.
func rsLeads(cfg app.Config, id string) error {
	h, err := local.LeaseHolder(cfg.LeaderElection.Namespace, cfg.LeaderElection.LeaseName)
	if err != nil {
		return err
	}
	if h != id {
		return fmt.Errorf("lease holder %q, want %q", h, id)
	}
	return nil
}

// rsDeletePod deletes a pod straight through the cluster's admin client, which bypasses the
// proxy: the controller cannot see it while the proxy is cut.
func rsDeletePod(t *testing.T, c *testenv.Cluster, ns, name string) {
	t.Helper()
	err := c.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRemoteOutageKeepsSets(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "gcp")
	ns := testNamespace(t, "src")
	fwd := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	db := netset.Source{Cluster: "gcp", Namespace: ns, Name: "db"}
	pod(t, gcp, ns, "fwd-1", fwd.Name, "198.18.1.1")
	pod(t, gcp, ns, "fwd-2", fwd.Name, "198.18.1.2", "fd00:1::2")
	pod(t, gcp, ns, "db-1", db.Name, "198.18.2.1")

	r := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "sets converge", rsAll(
		rsHas(api, fwd, "198.18.1.1/32", "198.18.1.2/32", "fd00:1::2/128"),
		rsHas(api, db, "198.18.2.1/32"),
	))
	testenv.Eventually(t, 30*time.Second, "gcp up and ready", func() error {
		if err := rsUp(t, r, "gcp", 1); err != nil {
			return err
		}
		return rsReady(t, r)
	})
	versions := rsSetVersions(t, api, "gcp")
	if len(versions) != 2 {
		t.Fatalf("gcp sets: %v, want 2", versions)
	}
	lastSync := func() float64 { return rsMetric(t, r, rsLastSync, rsRemote("gcp")) }
	if lastSync() == 0 {
		t.Fatal("remote_last_sync_timestamp_seconds{remote=gcp} was never set")
	}

	gcp.Cut(t)
	cut := time.Now()
	testenv.Eventually(t, 10*time.Second, "remote_up{remote=gcp} drops to 0", func() error { return rsUp(t, r, "gcp", 0) })
	testenv.Eventually(t, 10*time.Second, "/readyz names gcp", func() error { return rsNotReadyFor(t, r, []string{"gcp"}) })
	t.Logf("outage visible after %v", time.Since(cut).Round(time.Millisecond))
	syncedBefore := lastSync()

	// Changes the controller cannot see: the admin client talks to the API server directly.
	// One pod of the forwarder set goes and another comes; the db set loses its only pod.
	rsDeletePod(t, gcp, ns, "fwd-1")
	pod(t, gcp, ns, "fwd-3", fwd.Name, "198.18.1.3")
	rsDeletePod(t, gcp, ns, "db-1")

	// An outage never deletes or changes sets by itself.
	testenv.Hold(t, 5*time.Second, "sets untouched during the outage", func() error {
		if got := rsSetVersions(t, api, "gcp"); !maps.Equal(got, versions) {
			return fmt.Errorf("gcp sets changed: %v, were %v", got, versions)
		}
		if err := rsUp(t, r, "gcp", 0); err != nil {
			return err
		}
		if code, body := readyz(t, r); code != 503 {
			return fmt.Errorf("/readyz while gcp is cut: %d %s", code, body)
		}
		if v := lastSync(); v != syncedBefore {
			return fmt.Errorf("remote_last_sync_timestamp_seconds moved from %v to %v while gcp is cut", syncedBefore, v)
		}
		return nil
	})

	gcp.Restore(t)
	restored := time.Now()
	testenv.Eventually(t, rsRecovery, "sets converge on the changes made during the outage", rsAll(
		rsHas(api, fwd, "198.18.1.2/32", "198.18.1.3/32", "fd00:1::2/128"),
		func() error { return setGone(api, db) },
	))
	t.Logf("changes made during the outage applied %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "gcp up and ready again", func() error {
		if err := rsUp(t, r, "gcp", 1); err != nil {
			return err
		}
		if v := lastSync(); v < float64(restored.UnixNano())/1e9 {
			return fmt.Errorf("remote_last_sync_timestamp_seconds %v is older than the restore", v)
		}
		return rsReady(t, r)
	})
	// The forwarder set was updated in place, not recreated.
	after := rsSetVersions(t, api, "gcp")
	name := netset.SetName(fwd)
	uid, _, _ := strings.Cut(versions[name], "/")
	if !strings.HasPrefix(after[name], uid+"/") || after[name] == versions[name] {
		t.Errorf("set %s: %q after the outage, was %q; want the same object, updated", name, after[name], versions[name])
	}
}

func TestStartWithRemoteDown(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "aws", "gcp")
	nsA := testNamespace(t, "src-a")
	nsG := testNamespace(t, "src-g")
	web := netset.Source{Cluster: "aws", Namespace: nsA, Name: "web"}
	db := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "db"}
	cache := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "cache"}
	pod(t, aws, nsA, "web-1", web.Name, "198.18.10.1")
	pod(t, gcp, nsG, "db-1", db.Name, "198.18.20.1")
	pod(t, gcp, nsG, "db-2", db.Name, "198.18.20.2")
	pod(t, gcp, nsG, "cache-1", cache.Name, "198.18.21.1")

	// First run: gcp is down from the start; aws must not wait for it.
	gcp.Cut(t)
	r := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "aws set while gcp is down", rsHas(api, web, "198.18.10.1/32"))
	testenv.Eventually(t, 10*time.Second, "/readyz names gcp, not aws", func() error {
		return rsNotReadyFor(t, r, []string{"gcp"}, "aws")
	})
	if err := rsUp(t, r, "gcp", 0); err != nil {
		t.Error(err)
	}
	for _, src := range []netset.Source{db, cache} {
		if err := setGone(api, src); err != nil {
			t.Errorf("while gcp was never reachable: %v", err)
		}
	}

	gcp.Restore(t)
	restored := time.Now()
	testenv.Eventually(t, rsRecovery, "gcp sets once it is back", rsAll(
		rsHas(api, db, "198.18.20.1/32", "198.18.20.2/32"),
		rsHas(api, cache, "198.18.21.1/32"),
	))
	t.Logf("gcp sets made %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "ready once gcp is back", func() error { return rsReady(t, r) })
	r.stop()

	// Second run: gcp is down at start again, and has changed while nobody watched (db lost a
	// pod, cache all of its pods). The sets of the first run must stay as they are until the
	// controller has seen gcp: until then it cannot know what is stale.
	gcpBefore := rsSetVersions(t, api, "gcp")
	awsBefore := rsSetVersions(t, api, "aws")
	if len(gcpBefore) != 2 {
		t.Fatalf("gcp sets after the first run: %v, want 2", gcpBefore)
	}
	gcp.Cut(t)
	rsDeletePod(t, gcp, nsG, "db-2")
	rsDeletePod(t, gcp, nsG, "cache-1")
	r = start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "second run leads, aws in sync, not ready because of gcp", func() error {
		if err := rsLeads(cfg, cfg.Identity); err != nil {
			return err
		}
		// Only the leader's controller computes the inventory.
		if err := rsInventory(t, r, map[string]int{"aws": 1}); err != nil {
			return err
		}
		return rsNotReadyFor(t, r, []string{"gcp"}, "aws")
	})
	testenv.Hold(t, 5*time.Second, "sets kept while gcp is down at start", func() error {
		if got := rsSetVersions(t, api, "gcp"); !maps.Equal(got, gcpBefore) {
			return fmt.Errorf("gcp sets %v, were %v", got, gcpBefore)
		}
		if got := rsSetVersions(t, api, "aws"); !maps.Equal(got, awsBefore) {
			return fmt.Errorf("aws sets %v, were %v", got, awsBefore)
		}
		return nil
	})
	// The controller did look at the gcp sets (their local add events) and left them alone.
	if v := rsMetric(t, r, rsReconciles, map[string]string{"remote": "gcp", "result": "skipped"}); v < 2 {
		t.Errorf("reconcile_total{remote=gcp,result=skipped} = %v, want at least one per gcp set", v)
	}

	gcp.Restore(t)
	restored = time.Now()
	testenv.Eventually(t, rsRecovery, "gcp sets converge once gcp is back", rsAll(
		rsHas(api, db, "198.18.20.1/32"),
		func() error { return setGone(api, cache) },
	))
	t.Logf("gcp sets converged %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "ready once gcp is back", func() error { return rsReady(t, r) })
	if got := rsSetVersions(t, api, "aws"); !maps.Equal(got, awsBefore) {
		t.Errorf("aws sets rewritten: %v, were %v", got, awsBefore)
	}
}

func TestRestartMakesNoWrites(t *testing.T) {
	// The CRD group here; the other tests of this file write projectcalico.org/v3.
	api := calico.APICRD
	cfg := newConfig(t, api, "aws", "gcp")
	nsA := testNamespace(t, "src-a")
	nsG := testNamespace(t, "src-g")
	web := netset.Source{Cluster: "aws", Namespace: nsA, Name: "web"}
	dual := netset.Source{Cluster: "aws", Namespace: nsA, Name: "dual"}
	// A label value that is no valid object name: the set's name is cleaned and hashed.
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

	converged := func(r *running) func() error {
		return rsAll(
			rsHas(api, web, "198.18.30.1/32", "198.18.30.2/32", "198.18.30.3/32"),
			rsHas(api, dual, "198.18.31.1/32", "198.18.31.2/32", "fd00:31::1/128", "fd00:31::2/128"),
			rsHas(api, batch, "198.18.32.1/32"),
			rsHas(api, db, "198.18.33.1/32", "fd00:33::1/128"),
			func() error { return rsInventory(t, r, map[string]int{"aws": 3, "gcp": 1}) },
		)
	}

	first := start(t, cfg)
	testenv.Eventually(t, 60*time.Second, "first run converges", converged(first))
	// Let the first run finish whatever it has queued before stopping it.
	testenv.Eventually(t, 30*time.Second, "first run's writes settle", func() error {
		n := len(local.WritesBut(t, app.Name))
		time.Sleep(time.Second)
		if m := len(local.WritesBut(t, app.Name)); m != n {
			return fmt.Errorf("writes went from %d to %d in a second", n, m)
		}
		return nil
	})
	first.stop()
	baseline := local.WritesBut(t, app.Name)
	// At least the 4 sets were created: the audit log does see the controller's writes.
	if creates := slices.DeleteFunc(slices.Clone(baseline), func(e testenv.AuditEvent) bool {
		return e.Verb != "create" || e.ObjectRef.Resource != "globalnetworksets"
	}); len(creates) < 4 {
		t.Fatalf("the audit log shows %d set creations by the first run, want at least 4:%s", len(creates), baseline.String())
	}
	versions := map[string]string{}
	maps.Copy(versions, rsSetVersions(t, api, "aws"))
	maps.Copy(versions, rsSetVersions(t, api, "gcp"))

	second := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "second run leads", func() error { return rsLeads(cfg, cfg.Identity) })
	testenv.Eventually(t, 30*time.Second, "second run ready and in sync", rsAll(
		func() error { return rsReady(t, second) },
		converged(second),
	))
	testenv.Eventually(t, 30*time.Second, "second run reconciled every set", func() error {
		for remote, n := range map[string]float64{"aws": 3, "gcp": 1} {
			l := map[string]string{"remote": remote, "result": "success"}
			if v := rsMetric(t, second, rsReconciles, l); v < n {
				return fmt.Errorf("reconcile_total{remote=%s,result=success} = %v, want at least %v", remote, v, n)
			}
		}
		return nil
	})
	// Give whatever is still queued time to run, then make sure nothing is.
	time.Sleep(3 * time.Second)
	testenv.Eventually(t, 10*time.Second, "queue drained", func() error {
		if d := rsMetric(t, second, rsQueueDepth, map[string]string{"name": "policy"}); d != 0 {
			return fmt.Errorf("queue depth %v", d)
		}
		return nil
	})

	if after := local.WritesBut(t, app.Name); len(after) != len(baseline) {
		t.Errorf("a restart against an in-sync cluster made %d writes:%s", len(after)-len(baseline), after[len(baseline):].String())
	}
	if n := rsMetric(t, second, rsWrites, nil); n != 0 {
		t.Errorf("writes_total of the second run = %v, want 0", n)
	}
	now := map[string]string{}
	maps.Copy(now, rsSetVersions(t, api, "aws"))
	maps.Copy(now, rsSetVersions(t, api, "gcp"))
	if !maps.Equal(now, versions) {
		t.Errorf("sets changed across the restart: %v, were %v", now, versions)
	}
	t.Logf("second run: %v reconciles", rsMetric(t, second, rsReconciles, nil))
}

func TestRemovedRemoteIsGarbageCollected(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "aws", "gcp")
	nsA := testNamespace(t, "src-a")
	nsG := testNamespace(t, "src-g")
	keepA := netset.Source{Cluster: "aws", Namespace: nsA, Name: "keep-a"}
	keepB := netset.Source{Cluster: "aws", Namespace: nsA, Name: "keep-b"}
	dropA := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "drop-a"}
	dropB := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "drop-b"}
	pod(t, aws, nsA, "keep-a-0", keepA.Name, "198.18.40.1")
	pod(t, aws, nsA, "keep-a-1", keepA.Name, "198.18.40.2", "fd00:40::2")
	pod(t, aws, nsA, "keep-b-0", keepB.Name, "198.18.41.1")
	pod(t, gcp, nsG, "drop-a-0", dropA.Name, "198.18.42.1")
	pod(t, gcp, nsG, "drop-a-1", dropA.Name, "198.18.42.2")
	pod(t, gcp, nsG, "drop-b-0", dropB.Name, "fd00:43::1", "198.18.43.1")

	// A set that carries a gcp source's labels but not our managed-by label: not ours, so it
	// must survive the garbage collection of gcp's sets.
	foreign := netset.Source{Cluster: "gcp", Namespace: nsG, Name: "foreign"}
	foreignLabels := foreign.Labels()
	delete(foreignLabels, labels.ManagedBy)
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: netset.SetName(foreign), Labels: foreignLabels},
		Spec:       calico.GlobalNetworkSetSpec{Nets: []string{"192.0.2.0/24"}},
	}, api)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := calico.Resource(api)
	foreignSet, err := dyn.Resource(res).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(res).Delete(context.Background(), foreignSet.GetName(), metav1.DeleteOptions{})
	})

	r := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "sets of both remotes", rsAll(
		rsHas(api, keepA, "198.18.40.1/32", "198.18.40.2/32", "fd00:40::2/128"),
		rsHas(api, keepB, "198.18.41.1/32"),
		rsHas(api, dropA, "198.18.42.1/32", "198.18.42.2/32"),
		rsHas(api, dropB, "198.18.43.1/32", "fd00:43::1/128"),
		func() error { return rsInventory(t, r, map[string]int{"aws": 2, "gcp": 2}) },
	))
	r.stop()
	awsBefore := rsSetVersions(t, api, "aws")
	gcpBefore := rsSetVersions(t, api, "gcp")
	baseline := len(local.WritesBut(t, app.Name))

	onlyAWS := cfg
	onlyAWS.Remotes = []string{"aws"}
	if err := onlyAWS.Validate(); err != nil {
		t.Fatal(err)
	}
	r = start(t, onlyAWS)
	testenv.Eventually(t, 30*time.Second, "gcp's sets garbage-collected", func() error {
		if got := rsSetVersions(t, api, "gcp"); len(got) > 0 {
			return fmt.Errorf("left: %v", slices.Sorted(maps.Keys(got)))
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "ready, aws in sync", rsAll(
		func() error { return rsReady(t, r) },
		func() error { return rsInventory(t, r, map[string]int{"aws": 2}) },
	))
	time.Sleep(2 * time.Second) // anything else queued has run
	if got := rsSetVersions(t, api, "aws"); !maps.Equal(got, awsBefore) {
		t.Errorf("aws sets changed: %v, were %v", got, awsBefore)
	}
	// The only writes are one successful delete of each gcp set.
	deleted := map[string]int{}
	for _, e := range local.WritesBut(t, app.Name)[baseline:] {
		_, wasGCP := gcpBefore[e.ObjectRef.Name]
		switch {
		case e.Verb != "delete" || e.ObjectRef.Resource != "globalnetworksets" || !wasGCP:
			t.Errorf("unexpected write: %s %s/%s (%d)", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code)
		case e.ResponseStatus.Code == 200:
			deleted[e.ObjectRef.Name]++
		default:
			t.Logf("extra delete of %s answered %d", e.ObjectRef.Name, e.ResponseStatus.Code)
		}
	}
	for name := range gcpBefore {
		if deleted[name] != 1 {
			t.Errorf("set %s deleted %d times, want 1", name, deleted[name])
		}
	}
	for verb, want := range map[string]float64{"create": 0, "update": 0, "delete": float64(len(gcpBefore))} {
		if n := rsMetric(t, r, rsWrites, map[string]string{"verb": verb}); n != want {
			t.Errorf("writes_total{verb=%s} = %v, want %v", verb, n, want)
		}
	}
	for _, m := range []string{rsRemoteUp, rsLastSync, rsSets} {
		if rsMetricPresent(t, r, m, rsRemote("gcp")) {
			t.Errorf("%s has a series for gcp, which is no longer configured", m)
		}
	}
	// The foreign set is left alone.
	if got, err := dyn.Resource(res).Get(context.Background(), foreignSet.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("foreign set: %v", err)
	} else if got.GetResourceVersion() != foreignSet.GetResourceVersion() {
		t.Errorf("foreign set %s was modified", got.GetName())
	}
	// The remote side is only ever read.
	if _, err := gcp.Client.CoreV1().Pods(nsG).Get(context.Background(), "drop-a-0", metav1.GetOptions{}); err != nil {
		t.Errorf("pod of the removed remote: %v", err)
	}
}

func TestLeaderElection(t *testing.T) {
	api := calico.APIv3
	cfgA := newConfig(t, api, "aws")
	cfgB := cfgA
	cfgB.Identity = "replica-b"
	ns := testNamespace(t, "src")
	first := netset.Source{Cluster: "aws", Namespace: ns, Name: "first"}
	second := netset.Source{Cluster: "aws", Namespace: ns, Name: "second"}
	pod(t, aws, ns, "first-0", first.Name, "198.18.50.1")

	replicas := map[string]*running{
		cfgA.Identity: start(t, cfgA),
		cfgB.Identity: start(t, cfgB),
	}
	var leaderID, standbyID string
	testenv.Eventually(t, 30*time.Second, "one replica leads", func() error {
		h, err := local.LeaseHolder(cfgA.LeaderElection.Namespace, cfgA.LeaderElection.LeaseName)
		if err != nil {
			return err
		}
		if replicas[h] == nil {
			return fmt.Errorf("lease holder %q", h)
		}
		leaderID = h
		return nil
	})
	for id := range replicas {
		if id != leaderID {
			standbyID = id
		}
	}
	leader, standby := replicas[leaderID], replicas[standbyID]
	t.Logf("%s leads, %s stands by", leaderID, standbyID)

	testenv.Eventually(t, 30*time.Second, "leader writes the set", rsHas(api, first, "198.18.50.1/32"))
	testenv.Eventually(t, 30*time.Second, "both replicas ready", func() error {
		if err := rsReady(t, leader); err != nil {
			return fmt.Errorf("leader %s: %w", leaderID, err)
		}
		if err := rsReady(t, standby); err != nil {
			return fmt.Errorf("standby %s: %w", standbyID, err)
		}
		return nil
	})
	// Exactly one leads, and keeps leading: the standby writes nothing, reconciles nothing.
	testenv.Hold(t, 2*time.Second, "one stable leader, a passive standby", func() error {
		if err := rsLeads(cfgA, leaderID); err != nil {
			return err
		}
		if n := rsMetric(t, standby, rsWrites, nil); n != 0 {
			return fmt.Errorf("standby writes_total = %v", n)
		}
		if n := rsMetric(t, standby, rsReconciles, nil); n != 0 {
			return fmt.Errorf("standby reconcile_total = %v", n)
		}
		return nil
	})
	if n := rsMetric(t, leader, rsWrites, map[string]string{"verb": "create"}); n < 1 {
		t.Errorf("leader writes_total{verb=create} = %v, want at least 1", n)
	}

	// Graceful stop releases the lease: the standby takes over well within a lease duration.
	t0 := time.Now()
	leader.stop()
	stopped := time.Since(t0)
	pod(t, aws, ns, "first-1", first.Name, "198.18.50.2")
	pod(t, aws, ns, "second-0", second.Name, "198.18.51.1")
	testenv.Eventually(t, 3*cfgA.LeaseDuration, "standby takes over and follows new pods", rsAll(
		func() error { return rsLeads(cfgA, standbyID) },
		rsHas(api, first, "198.18.50.1/32", "198.18.50.2/32"),
		rsHas(api, second, "198.18.51.1/32"),
	))
	took := time.Since(t0)
	t.Logf("old leader stopped in %v; new leader reflected new pods %v after the stop began (lease duration %v)",
		stopped.Round(time.Millisecond), took.Round(time.Millisecond), cfgA.LeaseDuration)
	if took > cfgA.LeaseDuration {
		t.Errorf("takeover took %v, longer than the lease duration %v: was the lease released?", took, cfgA.LeaseDuration)
	}
	if c, u := rsMetric(t, standby, rsWrites, map[string]string{"verb": "create"}), rsMetric(t, standby, rsWrites, map[string]string{"verb": "update"}); c != 1 || u != 1 {
		t.Errorf("new leader writes_total: create %v, update %v; want 1 and 1", c, u)
	}
	testenv.Eventually(t, 10*time.Second, "new leader ready", func() error { return rsReady(t, standby) })
}
