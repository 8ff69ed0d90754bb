package resilience

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// testRemoteOutage: an outage never deletes or changes local objects by itself; once the
// remote is back, what changed during the outage is applied, in place.
func (c *Component[C]) testRemoteOutage(t *testing.T) {
	cfg := c.Config(t, gcp)
	ns := c.Namespace(t, c.Clusters.Remote(gcp), "src")
	gone := Source{Cluster: gcp, Namespace: ns, Name: "gone"}
	changed := Source{Cluster: gcp, Namespace: ns, Name: "changed"}
	stays := Source{Cluster: gcp, Namespace: ns, Name: "stays"}
	before := map[Source][]string{
		gone:    {"198.18.1.1", "198.18.1.2"},
		changed: {"198.18.2.1"},
		stays:   {"198.18.3.1,fd00:3::1", "198.18.3.2"},
	}
	converged := c.sources(t, cfg, before)

	r := c.Start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "local objects converge", converged)
	testenv.Eventually(t, 30*time.Second, "gcp up and ready", all(c.up(t, r, gcp, 1), ready(t, r)))
	versions := c.Versions(t, cfg, gcp)
	for src := range before {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(versions)), func(k string) bool { owned, _ := c.Owns(src, k); return owned }) {
			t.Fatalf("no local object of %s among %v", src, versions)
		}
	}
	c.outage(t, cfg, r, converged, versions, func() {
		// Changes the component cannot see: the admin client talks to the API server directly.
		c.Delete(t, gone)
		c.Change(t, changed, "198.18.2.2", "198.18.2.3")
	})
	c.Clusters.Remote(gcp).Restore(t)
	restored := time.Now()
	testenv.Eventually(t, recovery, "local objects converge on the changes made during the outage", all(
		c.gone(cfg, gone),
		c.has(cfg, changed, "198.18.2.2", "198.18.2.3"),
	))
	t.Logf("changes made during the outage applied %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "gcp up and ready again", all(
		c.up(t, r, gcp, 1),
		func() error {
			if v := c.lastSync(t, r, gcp); v < float64(restored.UnixNano())/1e9 {
				return fmt.Errorf("remote_last_sync_timestamp_seconds %v is older than the restore", v)
			}
			return nil
		},
		ready(t, r),
	))
	if err := c.Has(cfg, stays, before[stays]...); err != nil {
		t.Error(err)
	}
	c.checkUpdatedInPlace(t, versions, c.Versions(t, cfg, gcp), gone, changed)
}

// outage cuts gcp off from r, which converged on versions of the local objects, makes the
// changes of during, and checks, for a while, that nothing local moves: the objects, what
// converged checks, gcp down, r ready and gcp's last sync. gcp stays cut.
func (c *Component[C]) outage(t *testing.T, cfg C, r *Instance, converged func() error, versions map[string]string, during func()) {
	t.Helper()
	syncedBefore := c.lastSync(t, r, gcp)
	if syncedBefore == 0 {
		t.Fatal("remote_last_sync_timestamp_seconds{remote=gcp} was never set")
	}
	c.Clusters.Remote(gcp).Cut(t)
	cut := time.Now()
	testenv.Eventually(t, 10*time.Second, "remote_up{remote=gcp} drops to 0", c.up(t, r, gcp, 0))
	testenv.Eventually(t, 10*time.Second, "/readyz still 200, naming no remote", readyDespite(t, r, gcp))
	t.Logf("outage visible after %v", time.Since(cut).Round(time.Millisecond))
	during()

	testenv.Hold(t, 5*time.Second, "local objects untouched during the outage", all(
		converged,
		func() error {
			if got := c.Versions(t, cfg, gcp); !maps.Equal(got, versions) {
				return fmt.Errorf("local objects changed: %v, were %v", got, versions)
			}
			return nil
		},
		c.up(t, r, gcp, 0),
		readyDespite(t, r, gcp),
		func() error {
			if v := c.lastSync(t, r, gcp); v != syncedBefore {
				return fmt.Errorf("remote_last_sync_timestamp_seconds moved from %v to %v while gcp is cut", syncedBefore, v)
			}
			return nil
		},
	))
}

// checkUpdatedInPlace checks after against before: the objects of gone are left out, those
// a change of changed updates are the same objects, updated, and all others are untouched.
func (c *Component[C]) checkUpdatedInPlace(t *testing.T, before, after map[string]string, gone, changed Source) {
	t.Helper()
	for k, v := range before {
		uid, _, _ := strings.Cut(v, "/")
		if owned, _ := c.Owns(gone, k); owned {
			continue
		}
		if _, updated := c.Owns(changed, k); updated {
			if !strings.HasPrefix(after[k], uid+"/") || after[k] == v {
				t.Errorf("%s: %q after the change, was %q; want the same object, updated", k, after[k], v)
			}
		} else if after[k] != v {
			t.Errorf("%s was rewritten: %q, was %q", k, after[k], v)
		}
	}
}

// testStartWithRemoteDown: a remote down at start holds back neither the other remotes nor
// readiness checks, and the local objects of the down remote stay as they are until the
// component has seen it again: until then it cannot know what is stale.
func (c *Component[C]) testStartWithRemoteDown(t *testing.T) {
	cfg := c.Config(t, aws, gcp)
	nsA := c.Namespace(t, c.Clusters.Remote(aws), "src")
	nsG := c.Namespace(t, c.Clusters.Remote(gcp), "src")
	web := Source{Cluster: aws, Namespace: nsA, Name: "web"}
	db := Source{Cluster: gcp, Namespace: nsG, Name: "db"}
	cache := Source{Cluster: gcp, Namespace: nsG, Name: "cache"}
	steady := Source{Cluster: gcp, Namespace: nsG, Name: "steady"}
	c.Create(t, web, "198.18.10.1")
	gcpSources := map[Source][]string{
		db:     {"198.18.20.1", "198.18.20.2"},
		cache:  {"198.18.21.1"},
		steady: {"198.18.22.1"},
	}

	// First run: gcp is down from the start; aws must not wait for it.
	c.Clusters.Remote(gcp).Cut(t)
	gcpConverged := c.sources(t, cfg, gcpSources)
	r := c.Start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "aws objects while gcp is down", c.has(cfg, web, "198.18.10.1"))
	testenv.Eventually(t, 10*time.Second, "ready although gcp was never reachable", readyDespite(t, r, gcp))
	if err := c.up(t, r, gcp, 0)(); err != nil {
		t.Error(err)
	}
	for src := range gcpSources {
		if err := c.Gone(cfg, src); err != nil {
			t.Errorf("while gcp was never reachable: %v", err)
		}
	}
	c.Clusters.Remote(gcp).Restore(t)
	restored := time.Now()
	testenv.Eventually(t, recovery, "gcp objects once it is back", gcpConverged)
	t.Logf("gcp objects made %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "ready once gcp is back", ready(t, r))
	r.Stop()
	c.restartWithRemoteDown(t, cfg, gcpSources, db, cache, steady)
}

// restartWithRemoteDown is the second run of testStartWithRemoteDown: gcp is down at start
// again, and has changed while nobody watched: db loses a member and cache goes.
func (c *Component[C]) restartWithRemoteDown(t *testing.T, cfg C, gcpSources map[Source][]string, db, cache, steady Source) {
	gcpBefore := c.Versions(t, cfg, gcp)
	awsBefore := c.Versions(t, cfg, aws)
	if want := len(gcpSources) * c.ObjectsPerSource; len(gcpBefore) != want {
		t.Fatalf("gcp objects after the first run: %v, want %d", gcpBefore, want)
	}
	c.Clusters.Remote(gcp).Cut(t)
	c.Change(t, db, "198.18.20.1")
	c.Delete(t, cache)
	r := c.Start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "second run leads, aws in sync, ready although gcp is down", all(
		c.leads(cfg, "replica-a"),
		// Only the leader computes the inventory.
		c.inSync(t, r, map[string]int{aws: 1}),
		readyDespite(t, r, gcp),
	))
	testenv.Hold(t, 5*time.Second, "objects kept while gcp is down at start", func() error {
		for remote, was := range map[string]map[string]string{gcp: gcpBefore, aws: awsBefore} {
			if got := c.Versions(t, cfg, remote); !maps.Equal(got, was) {
				return fmt.Errorf("%s objects %v, were %v", remote, got, was)
			}
		}
		return nil
	})
	// The component did look at the gcp objects (their local add events) and left them alone.
	testenv.Eventually(t, time.Second, "gcp objects reconciled as skipped", func() error {
		l := map[string]string{"remote": gcp, "result": "skipped"}
		if v := c.value(t, r, "reconcile_total", l); v < float64(len(gcpSources)) {
			return fmt.Errorf("reconcile_total{remote=gcp,result=skipped} = %v, want at least one per gcp source", v)
		}
		return nil
	})

	c.Clusters.Remote(gcp).Restore(t)
	restored := time.Now()
	testenv.Eventually(t, recovery, "gcp objects converge once gcp is back", all(
		c.has(cfg, db, "198.18.20.1"),
		c.gone(cfg, cache),
	))
	t.Logf("gcp objects converged %v after restore", time.Since(restored).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "ready once gcp is back", ready(t, r))
	testenv.Eventually(t, 10*time.Second, "gcp in sync", c.inSync(t, r, map[string]int{gcp: 2}))
	if got := c.Versions(t, cfg, aws); !maps.Equal(got, awsBefore) {
		t.Errorf("aws objects rewritten: %v, were %v", got, awsBefore)
	}
	c.checkUpdatedInPlace(t, gcpBefore, c.Versions(t, cfg, gcp), cache, db)
	if err := c.Has(cfg, steady, gcpSources[steady]...); err != nil {
		t.Error(err)
	}
}

// testRestart: a restart against an in-sync local cluster reconciles everything and writes
// nothing.
func (c *Component[C]) testRestart(t *testing.T) {
	cfg := c.Config(t, aws, gcp)
	v := c.Varied(t, &cfg)
	converged := func(r *Instance) func() error { return all(v.Converged, c.inSync(t, r, v.PerRemote)) }

	first := c.Start(t, cfg)
	testenv.Eventually(t, 60*time.Second, "first run converges", converged(first))
	// Let the first run finish whatever it has queued before stopping it.
	c.settled(t, cfg)
	first.Stop()
	baseline := c.Writes(t, cfg)
	// The audit log does see the component's writes.
	creates := slices.DeleteFunc(slices.Clone(baseline), func(e testenv.AuditEvent) bool {
		return e.Verb != "create" || c.Key(e) == ""
	})
	if len(creates) < v.Creates {
		t.Fatalf("the audit log shows %d creations by the first run, want at least %d:%s", len(creates), v.Creates, baseline.String())
	}
	versions := c.versionsOf(t, cfg, aws, gcp)

	second := c.Start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "second run leads", c.leads(cfg, "replica-a"))
	testenv.Eventually(t, 30*time.Second, "second run ready and in sync", all(ready(t, second), converged(second)))
	testenv.Eventually(t, 30*time.Second, "second run reconciled every source", func() error {
		for remote, n := range v.PerRemote {
			l := map[string]string{"remote": remote, "result": "success"}
			if got := c.value(t, second, "reconcile_total", l); got < float64(n) {
				return fmt.Errorf("reconcile_total{remote=%s,result=success} = %v, want at least %d", remote, got, n)
			}
		}
		return nil
	})
	// Give whatever is still queued time to run, then make sure nothing is.
	time.Sleep(3 * time.Second)
	testenv.Eventually(t, 10*time.Second, "queue drained", func() error {
		if d := c.value(t, second, "workqueue_depth", map[string]string{"name": c.Queue}); d != 0 {
			return fmt.Errorf("queue depth %v", d)
		}
		return nil
	})

	if after := c.Writes(t, cfg); len(after) != len(baseline) {
		t.Errorf("a restart against an in-sync cluster made %d writes:%s", len(after)-len(baseline), after[len(baseline):].String())
	}
	if n := c.value(t, second, "writes_total", nil); n != 0 {
		t.Errorf("writes_total of the second run = %v, want 0", n)
	}
	if now := c.versionsOf(t, cfg, aws, gcp); !maps.Equal(now, versions) {
		t.Errorf("objects changed across the restart: %v, were %v", now, versions)
	}
	t.Logf("second run: %v reconciles, 0 writes", c.value(t, second, "reconcile_total", nil))
}

// testRemovedRemote: the local objects of a remote removed from the configuration are
// deleted at the next start, each once, and nothing else is written: neither the objects of
// the other remote, nor a foreign object carrying the removed remote's labels, nor the remote.
func (c *Component[C]) testRemovedRemote(t *testing.T) {
	cfg := c.Config(t, aws, gcp)
	nsA := c.Namespace(t, c.Clusters.Remote(aws), "src")
	nsG := c.Namespace(t, c.Clusters.Remote(gcp), "src")
	drop := Source{Cluster: gcp, Namespace: nsG, Name: "drop-a"}
	converged := c.sources(t, cfg, map[Source][]string{
		{Cluster: aws, Namespace: nsA, Name: "keep-a"}: {"198.18.40.1", "198.18.40.2,fd00:40::2"},
		{Cluster: aws, Namespace: nsA, Name: "keep-b"}: {"198.18.41.1"},
		drop: {"198.18.42.1", "198.18.42.2"},
		{Cluster: gcp, Namespace: nsG, Name: "drop-b"}: {"fd00:43::1,198.18.43.1"},
	})
	foreignUntouched := func() error { return nil }
	if c.Foreign != nil {
		foreignUntouched = c.Foreign(t, cfg, Source{Cluster: gcp, Namespace: nsG, Name: "foreign"})
	}

	r := c.Start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "objects of both remotes", all(converged, c.inSync(t, r, map[string]int{aws: 2, gcp: 2})))
	r.Stop()
	awsBefore := c.Versions(t, cfg, aws)
	gcpBefore := c.Versions(t, cfg, gcp)
	baseline := len(c.Writes(t, cfg))

	r = c.Start(t, c.Config(t, aws))
	testenv.Eventually(t, 30*time.Second, "gcp's objects garbage-collected", func() error {
		if got := c.Versions(t, cfg, gcp); len(got) > 0 {
			return fmt.Errorf("left: %v", slices.Sorted(maps.Keys(got)))
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "ready, aws in sync", all(ready(t, r), c.inSync(t, r, map[string]int{aws: 2})))
	time.Sleep(2 * time.Second) // anything else queued has run
	if got := c.Versions(t, cfg, aws); !maps.Equal(got, awsBefore) {
		t.Errorf("aws objects changed: %v, were %v", got, awsBefore)
	}
	c.checkDeletedOnce(t, c.Writes(t, cfg)[baseline:], gcpBefore)
	for verb, want := range map[string]float64{"create": 0, "update": 0, "delete": float64(len(gcpBefore))} {
		if n := c.value(t, r, "writes_total", map[string]string{"verb": verb}); n != want {
			t.Errorf("writes_total{verb=%s} = %v, want %v", verb, n, want)
		}
	}
	for _, m := range append([]string{"remote_up", "remote_last_sync_timestamp_seconds"}, c.RemoteSeries...) {
		if _, n := c.metric(t, r, m, remoteLabel(gcp)); n > 0 {
			t.Errorf("%s has a series for gcp, which is no longer configured", m)
		}
	}
	if err := foreignUntouched(); err != nil {
		t.Error(err)
	}
	// The remote side is only ever read.
	if err := c.InRemote(drop); err != nil {
		t.Errorf("source of the removed remote: %v", err)
	}
}

// checkDeletedOnce checks that writes are one successful delete of each object of was.
func (c *Component[C]) checkDeletedOnce(t *testing.T, writes testenv.AuditEvents, was map[string]string) {
	t.Helper()
	deleted := map[string]int{}
	for _, e := range writes {
		key := c.Key(e)
		_, known := was[key]
		switch {
		case e.Verb != "delete" || !known:
			t.Errorf("unexpected write: %s %s/%s (%d)", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, e.ResponseStatus.Code)
		case e.ResponseStatus.Code == 200:
			deleted[key]++
		default:
			t.Logf("extra delete of %s answered %d", key, e.ResponseStatus.Code)
		}
	}
	for key := range was {
		if deleted[key] != 1 {
			t.Errorf("%s deleted %d times, want 1", key, deleted[key])
		}
	}
}

// testLeaderHandover: of two replicas one leads and the other stands by, writing and
// reconciling nothing; a leader stopped gracefully releases its Lease, and the standby takes
// over well within a lease duration.
func (c *Component[C]) testLeaderHandover(t *testing.T) {
	cfgA := c.Config(t, aws)
	cfgB := cfgA
	le := c.Election(&cfgB)
	le.Identity = "replica-b"
	ns := c.Namespace(t, c.Clusters.Remote(aws), "src")
	first := Source{Cluster: aws, Namespace: ns, Name: "first"}
	second := Source{Cluster: aws, Namespace: ns, Name: "second"}
	c.Create(t, first, "198.18.50.1")

	replicas := map[string]*Instance{"replica-a": c.Start(t, cfgA), "replica-b": c.Start(t, cfgB)}
	leaderID, standbyID := c.electedOf(t, le, replicas)
	leader, standby := replicas[leaderID], replicas[standbyID]
	t.Logf("%s leads, %s stands by", leaderID, standbyID)

	testenv.Eventually(t, 30*time.Second, "leader writes the objects", c.has(cfgA, first, "198.18.50.1"))
	c.checkStandby(t, cfgA, leaderID, standbyID, replicas)

	// Graceful stop releases the lease: the standby takes over well within a lease duration.
	t0 := time.Now()
	leader.Stop()
	stopped := time.Since(t0)
	c.Change(t, first, "198.18.50.1", "198.18.50.2")
	c.Create(t, second, "198.18.51.1")
	testenv.Eventually(t, 3*le.LeaseDuration, "standby takes over and follows the sources", all(
		c.leads(cfgA, standbyID),
		c.has(cfgA, first, "198.18.50.1", "198.18.50.2"),
		c.has(cfgA, second, "198.18.51.1"),
	))
	took := time.Since(t0)
	t.Logf("old leader stopped in %v; new leader followed the sources %v after the stop began (lease duration %v)",
		stopped.Round(time.Millisecond), took.Round(time.Millisecond), le.LeaseDuration)
	if took > le.LeaseDuration {
		t.Errorf("takeover took %v, longer than the lease duration %v: was the lease released?", took, le.LeaseDuration)
	}
	creates := c.value(t, standby, "writes_total", map[string]string{"verb": "create"})
	updates := c.value(t, standby, "writes_total", map[string]string{"verb": "update"})
	if creates != float64(c.ObjectsPerSource) || updates != 1 {
		t.Errorf("new leader writes_total: create %v, update %v; want %d and 1", creates, updates, c.ObjectsPerSource)
	}
	testenv.Eventually(t, 10*time.Second, "new leader ready", ready(t, standby))
}

// checkStandby checks that of replicas both are ready, leaderID leads and keeps leading, and
// standbyID writes and reconciles nothing, while the leader has written every object of a
// source.
func (c *Component[C]) checkStandby(t *testing.T, cfg C, leaderID, standbyID string, replicas map[string]*Instance) {
	t.Helper()
	leader, standby := replicas[leaderID], replicas[standbyID]
	testenv.Eventually(t, 30*time.Second, "both replicas ready", func() error {
		if err := ready(t, leader)(); err != nil {
			return fmt.Errorf("leader %s: %w", leaderID, err)
		}
		if err := ready(t, standby)(); err != nil {
			return fmt.Errorf("standby %s: %w", standbyID, err)
		}
		return nil
	})
	// Exactly one leads, and keeps leading: the standby writes nothing, reconciles nothing.
	testenv.Hold(t, 2*time.Second, "one stable leader, a passive standby", all(
		c.leads(cfg, leaderID),
		func() error {
			for _, m := range []string{"writes_total", "reconcile_total"} {
				if n := c.value(t, standby, m, nil); n != 0 {
					return fmt.Errorf("standby %s = %v", m, n)
				}
			}
			return nil
		},
	))
	if n := c.value(t, leader, "writes_total", map[string]string{"verb": "create"}); n < float64(c.ObjectsPerSource) {
		t.Errorf("leader writes_total{verb=create} = %v, want at least %d", n, c.ObjectsPerSource)
	}
}

// electedOf waits for one of replicas (by identity) to hold the Lease of le and returns its
// identity and that of the other one.
func (c *Component[C]) electedOf(t *testing.T, le *config.LeaderElection, replicas map[string]*Instance) (leaderID, standbyID string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "one replica leads", func() error {
		h, err := c.Clusters.Local.LeaseHolder(le.Namespace, le.LeaseName)
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
	return leaderID, standbyID
}
