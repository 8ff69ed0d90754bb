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
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// The helpers of this file start with rs so they never clash with those of other test files
// of the package.

// rsRemoteNamespace creates the test's namespace suffix in c and deletes the Services and
// EndpointSlices in it when the test ends (no namespace controller runs here, so deleting the
// namespace would not delete them).
func rsRemoteNamespace(t *testing.T, c *testenv.Cluster, suffix string) string {
	t.Helper()
	ns := testNamespace(t, suffix)
	if err := c.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		svcs, err := c.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, s := range svcs.Items {
				_ = c.Client.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
		}
		_ = c.Client.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	return ns
}

const (
	rsRemoteUp   = app.MetricsPrefix + "_remote_up"
	rsDrift      = app.MetricsPrefix + "_mirror_drift"
	rsMirrors    = app.MetricsPrefix + "_mirrors"
	rsSelected   = app.MetricsPrefix + "_remote_services"
	rsWrites     = app.MetricsPrefix + "_writes_total"
	rsReconciles = app.MetricsPrefix + "_reconcile_total"
	rsQueueDepth = app.MetricsPrefix + "_workqueue_depth"
)

// rsInSync is nil when the controller's inventory of remote shows want selected Services, all
// of them mirrored and nothing else: the drift gauge exists and is 0.
func rsInSync(t *testing.T, r *running, remote string, want int) error {
	t.Helper()
	l := map[string]string{"remote": remote}
	if !metricPresent(t, r.Registry, rsDrift, l) {
		return fmt.Errorf("no %s series for %s yet", rsDrift, remote)
	}
	drift := metricValue(t, r.Registry, rsDrift, l)
	selected := metricValue(t, r.Registry, rsSelected, l)
	mirrors := metricValue(t, r.Registry, rsMirrors, l)
	if drift != 0 || selected != float64(want) || mirrors != float64(want) {
		return fmt.Errorf("%s: drift %v, remote services %v, mirrors %v; want 0, %d, %d", remote, drift, selected, mirrors, want, want)
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

// rsMirrored is nil when the mirror of src exists with nSlices slices holding exactly the
// addresses of want (address → ready).
func rsMirrored(cfg app.Config, src mirror.Source, nSlices int, want map[string]bool) error {
	_, slices, err := mirrorOf(cfg, src)
	if err != nil {
		return err
	}
	if len(slices) != nSlices {
		return fmt.Errorf("mirror of %s has %d slices, want %d", src, len(slices), nSlices)
	}
	if got := addressesOf(slices); !maps.Equal(got, want) {
		return fmt.Errorf("mirror of %s has addresses %v, want %v", src, got, want)
	}
	return nil
}

// rsObjectVersions returns "kind/name" → "uid/resourceVersion" of the mirror objects of remote
// in cfg's namespace.
func rsObjectVersions(t *testing.T, cfg app.Config, remote string) map[string]string {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: mirror.LabelCluster + "=" + remote}
	svcs, err := local.Client.CoreV1().Services(cfg.Namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	sls, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range svcs.Items {
		out["Service/"+s.Name] = string(s.UID) + "/" + s.ResourceVersion
	}
	for _, s := range sls.Items {
		out["EndpointSlice/"+s.Name] = string(s.UID) + "/" + s.ResourceVersion
	}
	return out
}

// rsMirrorWrites returns the write requests the service mirror made to objects in its mirror
// namespace (Leases left out, see WritesBut).
func rsMirrorWrites(t *testing.T, cfg app.Config) testenv.AuditEvents {
	t.Helper()
	var out testenv.AuditEvents
	for _, e := range local.WritesBut(t, app.Name) {
		if e.ObjectRef.Namespace == cfg.Namespace {
			out = append(out, e)
		}
	}
	return out
}

func rsHolderErr(holder string, err error, want string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("lease holder %q, want %q", holder, want)
}

func rsReadyEndpoints(addrs ...string) map[string]bool {
	out := map[string]bool{}
	for _, a := range addrs {
		out[a] = true
	}
	return out
}

// The reflectors of an informer back off exponentially (up to 30–60 s) while their API server
// is away, so recovering from an outage can take a while after the remote is back.
const rsRecovery = 60 * time.Second

func TestRemoteOutage(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := rsRemoteNamespace(t, aws, "src")

	remoteService(t, aws, ns, "gone", nil)
	remoteSlice(t, aws, ns, "gone", "gone-1", discoveryv1.AddressTypeIPv4, endpoint("10.10.0.1"), endpoint("10.10.0.2"))
	remoteService(t, aws, ns, "changed", nil)
	changedSlice := remoteSlice(t, aws, ns, "changed", "changed-1", discoveryv1.AddressTypeIPv4, endpoint("10.10.1.1"))
	remoteService(t, aws, ns, "stays", nil)
	remoteSlice(t, aws, ns, "stays", "stays-1", discoveryv1.AddressTypeIPv4, endpoint("10.10.2.1"))
	gone := mirror.Source{Cluster: "aws", Namespace: ns, Name: "gone"}
	changed := mirror.Source{Cluster: "aws", Namespace: ns, Name: "changed"}
	stays := mirror.Source{Cluster: "aws", Namespace: ns, Name: "stays"}
	before := map[mirror.Source]map[string]bool{
		gone:    rsReadyEndpoints("10.10.0.1", "10.10.0.2"),
		changed: rsReadyEndpoints("10.10.1.1"),
		stays:   rsReadyEndpoints("10.10.2.1"),
	}
	allMirrored := func(want map[mirror.Source]map[string]bool) func() error {
		return func() error {
			for src, addrs := range want {
				if err := rsMirrored(cfg, src, 1, addrs); err != nil {
					return err
				}
			}
			return nil
		}
	}

	r := start(t, cfg)
	eventually(t, 30*time.Second, "mirrors converge", allMirrored(before))
	eventually(t, 30*time.Second, "aws up and ready", func() error {
		if v := metricValue(t, r.Registry, rsRemoteUp, map[string]string{"remote": "aws"}); v != 1 {
			return fmt.Errorf("remote_up %v", v)
		}
		return rsReady(t, r)
	})
	versions := rsObjectVersions(t, cfg, "aws")

	aws.Cut(t)
	cut := time.Now()
	eventually(t, 10*time.Second, "remote_up{remote=aws} drops to 0", func() error {
		if v := metricValue(t, r.Registry, rsRemoteUp, map[string]string{"remote": "aws"}); v != 0 {
			return fmt.Errorf("remote_up %v", v)
		}
		return nil
	})
	eventually(t, 10*time.Second, "/readyz reports aws", func() error {
		code, body := readyz(t, r)
		if code != 503 || !strings.Contains(body, "[-]remote:aws") {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})
	t.Logf("outage visible after %v", time.Since(cut).Round(time.Millisecond))
	lastSync := func() float64 {
		return metricValue(t, r.Registry, app.MetricsPrefix+"_remote_last_sync_timestamp_seconds", map[string]string{"remote": "aws"})
	}
	syncedBefore := lastSync()
	if syncedBefore == 0 {
		t.Fatal("remote_last_sync_timestamp_seconds{remote=aws} was never set")
	}

	// Changes the controller cannot see: the admin client talks to the API server directly.
	ctx := context.Background()
	if err := aws.Client.CoreV1().Services(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := aws.Client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "gone-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	changedSlice.Endpoints = []discoveryv1.Endpoint{endpoint("10.10.1.2"), endpoint("10.10.1.3")}
	if _, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, changedSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// An outage never deletes or changes mirrors by itself.
	testenv.Hold(t, 5*time.Second, "mirrors untouched during the outage", func() error {
		if err := allMirrored(before)(); err != nil {
			return err
		}
		if got := rsObjectVersions(t, cfg, "aws"); !maps.Equal(got, versions) {
			return fmt.Errorf("mirror objects changed: %v, were %v", got, versions)
		}
		if v := metricValue(t, r.Registry, rsRemoteUp, map[string]string{"remote": "aws"}); v != 0 {
			return fmt.Errorf("remote_up %v while aws is cut", v)
		}
		if v := lastSync(); v != syncedBefore {
			return fmt.Errorf("remote_last_sync_timestamp_seconds moved from %v to %v while aws is cut", syncedBefore, v)
		}
		return nil
	})

	aws.Restore(t)
	restored := time.Now()
	eventually(t, rsRecovery, "deleted Service's mirror and slices removed", func() error { return mirrorGone(cfg, gone) })
	eventually(t, rsRecovery, "changed endpoints mirrored", func() error {
		return rsMirrored(cfg, changed, 1, rsReadyEndpoints("10.10.1.2", "10.10.1.3"))
	})
	t.Logf("changes made during the outage mirrored %v after restore", time.Since(restored).Round(time.Millisecond))
	eventually(t, 30*time.Second, "aws up and ready again", func() error {
		if v := metricValue(t, r.Registry, rsRemoteUp, map[string]string{"remote": "aws"}); v != 1 {
			return fmt.Errorf("remote_up %v", v)
		}
		if v := lastSync(); v < float64(restored.UnixNano())/1e9 {
			return fmt.Errorf("remote_last_sync_timestamp_seconds %v is older than the restore", v)
		}
		return rsReady(t, r)
	})
	if err := rsMirrored(cfg, stays, 1, before[stays]); err != nil {
		t.Error(err)
	}
	after := rsObjectVersions(t, cfg, "aws")
	for k, v := range versions {
		uid, _, _ := strings.Cut(v, "/")
		switch {
		case strings.Contains(k, mirror.ServiceName(gone)):
			// Deleted, checked above.
		case strings.HasPrefix(k, "EndpointSlice/"+mirror.ServiceName(changed)):
			// The changed slice is updated in place, not recreated.
			if !strings.HasPrefix(after[k], uid+"/") || after[k] == v {
				t.Errorf("%s: %q after the change, was %q; want the same object, updated", k, after[k], v)
			}
		default:
			if after[k] != v {
				t.Errorf("%s was rewritten: %q, was %q", k, after[k], v)
			}
		}
	}
}

func TestStartWithRemoteDown(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	nsA := rsRemoteNamespace(t, aws, "src")
	nsG := rsRemoteNamespace(t, gcp, "src")
	remoteService(t, aws, nsA, "web", nil)
	remoteSlice(t, aws, nsA, "web", "web-1", discoveryv1.AddressTypeIPv4, endpoint("10.20.0.1"))
	remoteService(t, gcp, nsG, "db", nil)
	remoteSlice(t, gcp, nsG, "db", "db-1", discoveryv1.AddressTypeIPv4, endpoint("10.30.0.1"), endpoint("10.30.0.2"))
	web := mirror.Source{Cluster: "aws", Namespace: nsA, Name: "web"}
	db := mirror.Source{Cluster: "gcp", Namespace: nsG, Name: "db"}
	webAddrs := rsReadyEndpoints("10.20.0.1")
	dbAddrs := rsReadyEndpoints("10.30.0.1", "10.30.0.2")

	// First run: gcp is down from the start; aws must not wait for it.
	gcp.Cut(t)
	r := start(t, cfg)
	eventually(t, 30*time.Second, "aws mirrored while gcp is down", func() error { return rsMirrored(cfg, web, 1, webAddrs) })
	eventually(t, 10*time.Second, "/readyz names gcp, not aws", func() error {
		code, body := readyz(t, r)
		if code != 503 || !strings.Contains(body, "[-]remote:gcp") || !strings.Contains(body, "[+]remote:aws ok") {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})
	if v := metricValue(t, r.Registry, rsRemoteUp, map[string]string{"remote": "gcp"}); v != 0 {
		t.Errorf("remote_up{remote=gcp} = %v while gcp is cut", v)
	}
	if _, _, err := mirrorOf(cfg, db); !apierrors.IsNotFound(err) {
		t.Errorf("mirror of %s while gcp was never reachable: err %v", db, err)
	}

	gcp.Restore(t)
	restored := time.Now()
	eventually(t, rsRecovery, "gcp mirrored once it is back", func() error { return rsMirrored(cfg, db, 1, dbAddrs) })
	t.Logf("gcp mirrored %v after restore", time.Since(restored).Round(time.Millisecond))
	eventually(t, 30*time.Second, "ready once gcp is back", func() error { return rsReady(t, r) })
	r.stop()

	// Second run: gcp is down at start again, and the mirror the first run made must stay:
	// until the controller has seen gcp, it cannot know the mirror is an orphan.
	gcpBefore := rsObjectVersions(t, cfg, "gcp")
	awsBefore := rsObjectVersions(t, cfg, "aws")
	if len(gcpBefore) != 2 {
		t.Fatalf("gcp mirror objects after the first run: %v, want a Service and a slice", gcpBefore)
	}
	gcp.Cut(t)
	r = start(t, cfg)
	eventually(t, 30*time.Second, "second run leads, aws in sync, not ready because of gcp", func() error {
		if h, err := local.LeaseHolder(cfg.LeaderElection.Namespace, cfg.LeaderElection.LeaseName); err != nil || h != cfg.Identity {
			return rsHolderErr(h, err, cfg.Identity)
		}
		// Only the leader's controller computes the inventory.
		if err := rsInSync(t, r, "aws", 1); err != nil {
			return err
		}
		code, body := readyz(t, r)
		if code != 503 || !strings.Contains(body, "[+]remote:aws ok") || !strings.Contains(body, "[-]remote:gcp") {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})
	testenv.Hold(t, 5*time.Second, "mirrors kept while gcp is down at start", func() error {
		if got := rsObjectVersions(t, cfg, "gcp"); !maps.Equal(got, gcpBefore) {
			return fmt.Errorf("gcp mirror objects %v, were %v", got, gcpBefore)
		}
		if got := rsObjectVersions(t, cfg, "aws"); !maps.Equal(got, awsBefore) {
			return fmt.Errorf("aws mirror objects %v, were %v", got, awsBefore)
		}
		return nil
	})
	// The controller did look at the gcp mirror (its local add event) and left it alone.
	eventually(t, time.Second, "gcp mirror reconciled as skipped", func() error {
		if v := metricValue(t, r.Registry, rsReconciles, map[string]string{"remote": "gcp", "result": "skipped"}); v < 1 {
			return fmt.Errorf("reconcile_total{remote=gcp,result=skipped} = %v", v)
		}
		return nil
	})
	gcp.Restore(t)
	eventually(t, rsRecovery, "ready once gcp is back", func() error { return rsReady(t, r) })
	eventually(t, 10*time.Second, "gcp in sync", func() error { return rsInSync(t, r, "gcp", 1) })
	if got := rsObjectVersions(t, cfg, "gcp"); !maps.Equal(got, gcpBefore) {
		t.Errorf("gcp mirror objects rewritten after gcp came back: %v, were %v", got, gcpBefore)
	}
	if err := rsMirrored(cfg, db, 1, dbAddrs); err != nil {
		t.Error(err)
	}
}

func TestRestartMakesNoWrites(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	nsA := rsRemoteNamespace(t, aws, "src")
	nsG := rsRemoteNamespace(t, gcp, "src")
	type expect struct {
		slices int
		addrs  map[string]bool
	}
	want := map[mirror.Source]expect{}

	// Dual-stack, three slices (two IPv4, one IPv6), a not-ready endpoint.
	remoteService(t, aws, nsA, "multi", func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	})
	notReady := endpoint("10.40.0.5")
	notReady.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(true)}
	remoteSlice(t, aws, nsA, "multi", "multi-a", discoveryv1.AddressTypeIPv4, endpoint("10.40.0.1"), endpoint("10.40.0.2"), endpoint("10.40.0.3"))
	remoteSlice(t, aws, nsA, "multi", "multi-b", discoveryv1.AddressTypeIPv4, endpoint("10.40.0.4"), notReady)
	remoteSlice(t, aws, nsA, "multi", "multi-v6", discoveryv1.AddressTypeIPv6, endpoint("fd00:40::1"), endpoint("fd00:40::2"))
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "multi"}] = expect{3, map[string]bool{
		"10.40.0.1": true, "10.40.0.2": true, "10.40.0.3": true, "10.40.0.4": true, "10.40.0.5": false,
		"fd00:40::1": true, "fd00:40::2": true,
	}}

	// Headless, StatefulSet-like: hostnames, not-ready addresses published.
	remoteService(t, aws, nsA, "headless", func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.PublishNotReadyAddresses = true
	})
	var hs []discoveryv1.Endpoint
	for i := range 3 {
		e := endpoint(fmt.Sprintf("10.41.0.%d", i+1))
		e.Hostname = ptr.To(fmt.Sprintf("web-%d", i))
		hs = append(hs, e)
	}
	remoteSlice(t, aws, nsA, "headless", "headless-1", discoveryv1.AddressTypeIPv4, hs...)
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "headless"}] = expect{1, rsReadyEndpoints("10.41.0.1", "10.41.0.2", "10.41.0.3")}

	// Over 100 endpoints in one slice, and a second slice.
	remoteService(t, aws, nsA, "big", nil)
	var big []discoveryv1.Endpoint
	bigAddrs := map[string]bool{}
	for i := range 150 {
		a := fmt.Sprintf("10.42.%d.%d", i/100, i%100+1)
		big = append(big, endpoint(a))
		bigAddrs[a] = true
	}
	remoteSlice(t, aws, nsA, "big", "big-1", discoveryv1.AddressTypeIPv4, big...)
	remoteSlice(t, aws, nsA, "big", "big-2", discoveryv1.AddressTypeIPv4, endpoint("10.42.9.1"), endpoint("10.42.9.2"))
	bigAddrs["10.42.9.1"], bigAddrs["10.42.9.2"] = true, true
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "big"}] = expect{2, bigAddrs}

	// NodePort with session affinity: the mirror is ClusterIP without node ports.
	remoteService(t, aws, nsA, "nodeport", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	})
	remoteSlice(t, aws, nsA, "nodeport", "nodeport-1", discoveryv1.AddressTypeIPv4, endpoint("10.43.0.1"))
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "nodeport"}] = expect{1, rsReadyEndpoints("10.43.0.1")}

	// LoadBalancer with a single unnamed port whose targetPort the API server defaults, and a
	// slice without endpoints.
	remoteService(t, gcp, nsG, "lb", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports = []corev1.ServicePort{{Port: 443}}
	})
	remoteSlice(t, gcp, nsG, "lb", "lb-1", discoveryv1.AddressTypeIPv4, endpoint("10.50.0.1"))
	remoteSlice(t, gcp, nsG, "lb", "lb-empty", discoveryv1.AddressTypeIPv4)
	want[mirror.Source{Cluster: "gcp", Namespace: nsG, Name: "lb"}] = expect{2, rsReadyEndpoints("10.50.0.1")}

	perRemote := map[string]int{"aws": 4, "gcp": 1}
	converged := func(r *running) func() error {
		return func() error {
			for src, w := range want {
				if err := rsMirrored(cfg, src, w.slices, w.addrs); err != nil {
					return err
				}
			}
			for remote, n := range perRemote {
				if err := rsInSync(t, r, remote, n); err != nil {
					return err
				}
			}
			return nil
		}
	}

	first := start(t, cfg)
	eventually(t, 60*time.Second, "first run converges", converged(first))
	// Let the first run finish whatever it has queued before stopping it.
	eventually(t, 30*time.Second, "first run's writes settle", func() error {
		n := len(rsMirrorWrites(t, cfg))
		time.Sleep(time.Second)
		if m := len(rsMirrorWrites(t, cfg)); m != n {
			return fmt.Errorf("writes went from %d to %d in a second", n, m)
		}
		return nil
	})
	first.stop()
	baseline := rsMirrorWrites(t, cfg)
	// 5 Services and 9 slices were created: the audit log does see the controller's writes.
	if len(baseline) < 14 {
		t.Fatalf("the audit log shows %d writes by the first run, want at least 14:%s", len(baseline), baseline.String())
	}

	second := start(t, cfg)
	eventually(t, 30*time.Second, "second run leads", func() error {
		h, err := local.LeaseHolder(cfg.LeaderElection.Namespace, cfg.LeaderElection.LeaseName)
		if err != nil || h != cfg.Identity {
			return rsHolderErr(h, err, cfg.Identity)
		}
		return nil
	})
	eventually(t, 30*time.Second, "second run ready and in sync", func() error {
		if err := rsReady(t, second); err != nil {
			return err
		}
		return converged(second)()
	})
	eventually(t, 30*time.Second, "second run reconciled every Service", func() error {
		if n := metricValue(t, second.Registry, rsReconciles, map[string]string{"result": "success"}); n < float64(len(want)) {
			return fmt.Errorf("%v successful reconciles, want at least %d", n, len(want))
		}
		return nil
	})
	// Give whatever is still queued time to run, then make sure nothing is.
	time.Sleep(3 * time.Second)
	eventually(t, 10*time.Second, "queue drained", func() error {
		if d := metricValue(t, second.Registry, rsQueueDepth, map[string]string{"name": "service_mirror"}); d != 0 {
			return fmt.Errorf("queue depth %v", d)
		}
		return nil
	})

	if after := rsMirrorWrites(t, cfg); len(after) != len(baseline) {
		t.Errorf("a restart against an in-sync cluster made %d writes:%s", len(after)-len(baseline), after[len(baseline):].String())
	}
	if n := metricValue(t, second.Registry, rsWrites, nil); n != 0 {
		t.Errorf("writes_total of the second run = %v, want 0", n)
	}
	t.Logf("second run: %v reconciles, 0 writes", metricValue(t, second.Registry, rsReconciles, nil))
}

func TestRemovedRemoteIsGarbageCollected(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	nsA := rsRemoteNamespace(t, aws, "src")
	nsG := rsRemoteNamespace(t, gcp, "src")
	remoteService(t, aws, nsA, "keep-a", nil)
	remoteSlice(t, aws, nsA, "keep-a", "keep-a-1", discoveryv1.AddressTypeIPv4, endpoint("10.60.0.1"))
	remoteSlice(t, aws, nsA, "keep-a", "keep-a-2", discoveryv1.AddressTypeIPv6, endpoint("fd00:60::1"))
	remoteService(t, aws, nsA, "keep-b", nil)
	remoteSlice(t, aws, nsA, "keep-b", "keep-b-1", discoveryv1.AddressTypeIPv4, endpoint("10.60.1.1"))
	remoteService(t, gcp, nsG, "drop-a", nil)
	remoteSlice(t, gcp, nsG, "drop-a", "drop-a-1", discoveryv1.AddressTypeIPv4, endpoint("10.70.0.1"))
	remoteSlice(t, gcp, nsG, "drop-a", "drop-a-2", discoveryv1.AddressTypeIPv4, endpoint("10.70.0.2"))
	remoteService(t, gcp, nsG, "drop-b", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	remoteSlice(t, gcp, nsG, "drop-b", "drop-b-1", discoveryv1.AddressTypeIPv4, endpoint("10.70.1.1"))

	r := start(t, cfg)
	eventually(t, 30*time.Second, "both remotes mirrored", func() error {
		if err := rsInSync(t, r, "aws", 2); err != nil {
			return err
		}
		if err := rsInSync(t, r, "gcp", 2); err != nil {
			return err
		}
		if n := len(rsObjectVersions(t, cfg, "aws")); n != 5 {
			return fmt.Errorf("%d aws mirror objects, want 2 Services + 3 slices", n)
		}
		if n := len(rsObjectVersions(t, cfg, "gcp")); n != 5 {
			return fmt.Errorf("%d gcp mirror objects, want 2 Services + 3 slices", n)
		}
		return nil
	})
	r.stop()
	awsBefore := rsObjectVersions(t, cfg, "aws")
	gcpBefore := rsObjectVersions(t, cfg, "gcp")
	baseline := len(rsMirrorWrites(t, cfg))

	onlyAWS := cfg
	onlyAWS.Remotes = []string{"aws"}
	if err := onlyAWS.Validate(); err != nil {
		t.Fatal(err)
	}
	r = start(t, onlyAWS)
	eventually(t, 30*time.Second, "gcp's mirrors garbage-collected", func() error {
		if got := rsObjectVersions(t, cfg, "gcp"); len(got) > 0 {
			return fmt.Errorf("left: %v", slices.Sorted(maps.Keys(got)))
		}
		return nil
	})
	eventually(t, 30*time.Second, "ready, aws in sync", func() error {
		if err := rsReady(t, r); err != nil {
			return err
		}
		return rsInSync(t, r, "aws", 2)
	})
	time.Sleep(2 * time.Second) // anything else queued has run
	if got := rsObjectVersions(t, cfg, "aws"); !maps.Equal(got, awsBefore) {
		t.Errorf("aws mirror objects changed: %v, were %v", got, awsBefore)
	}
	// The only writes are one successful delete of each gcp object.
	deleted := map[string]int{}
	for _, e := range rsMirrorWrites(t, cfg)[baseline:] {
		kind := map[string]string{"services": "Service", "endpointslices": "EndpointSlice"}[e.ObjectRef.Resource]
		_, wasGCP := gcpBefore[kind+"/"+e.ObjectRef.Name]
		switch {
		case e.Verb != "delete" || !wasGCP:
			t.Errorf("unexpected write: %s %s/%s (%d)", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code)
		case e.ResponseStatus.Code == 200:
			deleted[kind+"/"+e.ObjectRef.Name]++
		default:
			t.Logf("extra delete of %s/%s answered %d", e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code)
		}
	}
	for k := range gcpBefore {
		if deleted[k] != 1 {
			t.Errorf("%s deleted %d times, want 1", k, deleted[k])
		}
	}
	for _, verb := range []string{"create", "update"} {
		if n := metricValue(t, r.Registry, rsWrites, map[string]string{"verb": verb}); n != 0 {
			t.Errorf("writes_total{verb=%s} = %v, want 0", verb, n)
		}
	}
	if metricPresent(t, r.Registry, rsRemoteUp, map[string]string{"remote": "gcp"}) {
		t.Error("remote_up has a series for gcp, which is no longer configured")
	}
	// The remote side is only ever read.
	if _, err := gcp.Client.CoreV1().Services(nsG).Get(context.Background(), "drop-a", metav1.GetOptions{}); err != nil {
		t.Errorf("remote Service of the removed remote: %v", err)
	}
}

func TestLeaderElection(t *testing.T) {
	cfgA := newConfig(t, "aws")
	cfgB := cfgA
	cfgB.Identity = "replica-b"
	ns := rsRemoteNamespace(t, aws, "src")
	remoteService(t, aws, ns, "first", nil)
	remoteSlice(t, aws, ns, "first", "first-1", discoveryv1.AddressTypeIPv4, endpoint("10.80.0.1"))
	first := mirror.Source{Cluster: "aws", Namespace: ns, Name: "first"}

	replicas := map[string]*running{
		cfgA.Identity: start(t, cfgA),
		cfgB.Identity: start(t, cfgB),
	}
	var leaderID, standbyID string
	eventually(t, 30*time.Second, "one replica leads", func() error {
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

	eventually(t, 30*time.Second, "leader mirrors", func() error { return rsMirrored(cfgA, first, 1, rsReadyEndpoints("10.80.0.1")) })
	eventually(t, 30*time.Second, "both replicas ready", func() error {
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
		if h, err := local.LeaseHolder(cfgA.LeaderElection.Namespace, cfgA.LeaderElection.LeaseName); err != nil || h != leaderID {
			return rsHolderErr(h, err, leaderID)
		}
		if n := metricValue(t, standby.Registry, rsWrites, nil); n != 0 {
			return fmt.Errorf("standby writes_total = %v", n)
		}
		if n := metricValue(t, standby.Registry, rsReconciles, nil); n != 0 {
			return fmt.Errorf("standby reconcile_total = %v", n)
		}
		return nil
	})
	if n := metricValue(t, leader.Registry, rsWrites, nil); n < 2 {
		t.Errorf("leader writes_total = %v, want at least a Service and a slice", n)
	}

	// Graceful stop releases the lease: the standby takes over well within a lease duration.
	t0 := time.Now()
	leader.stop()
	stopped := time.Since(t0)
	remoteService(t, aws, ns, "second", nil)
	remoteSlice(t, aws, ns, "second", "second-1", discoveryv1.AddressTypeIPv4, endpoint("10.80.1.1"))
	second := mirror.Source{Cluster: "aws", Namespace: ns, Name: "second"}
	eventually(t, 3*cfgA.LeaseDuration, "standby takes over and mirrors a new Service", func() error {
		if h, err := local.LeaseHolder(cfgA.LeaderElection.Namespace, cfgA.LeaderElection.LeaseName); err != nil || h != standbyID {
			return rsHolderErr(h, err, standbyID)
		}
		return rsMirrored(cfgA, second, 1, rsReadyEndpoints("10.80.1.1"))
	})
	took := time.Since(t0)
	t.Logf("old leader stopped in %v; new leader mirrored a new Service %v after the stop began (lease duration %v)",
		stopped.Round(time.Millisecond), took.Round(time.Millisecond), cfgA.LeaseDuration)
	if took > cfgA.LeaseDuration {
		t.Errorf("takeover took %v, longer than the lease duration %v: was the lease released?", took, cfgA.LeaseDuration)
	}
	if n := metricValue(t, standby.Registry, rsWrites, nil); n < 2 {
		t.Errorf("new leader writes_total = %v, want at least a Service and a slice", n)
	}
	eventually(t, 10*time.Second, "new leader ready", func() error { return rsReady(t, standby) })
	if err := rsMirrored(cfgA, first, 1, rsReadyEndpoints("10.80.0.1")); err != nil {
		t.Error(err)
	}
}
