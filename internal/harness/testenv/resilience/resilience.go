// Package resilience is one suite of tests for the components that turn what they read in
// remote clusters into objects of the local cluster: a remote's outage, a remote down at
// start, a restart against an in-sync cluster, a removed remote and a leader handover, against
// real API servers. A component runs the suite through a Component, a small adapter that knows
// how to configure and start it, make a source in a remote and read what it made of it.
package resilience

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The remotes every case reads from, as the package fixture names them.
const (
	aws = "aws"
	gcp = "gcp"
)

// The reflectors of an informer back off exponentially (up to 30–60 s) while their API server
// is away, so recovering from an outage can take a while after the remote is back.
const recovery = 60 * time.Second

// Source names a source in a remote: what the component keeps one set of local objects for.
type Source = ownership.Source

// Instance is one running replica of a component.
type Instance struct {
	Registry  prometheus.Gatherer
	AdminAddr string
	// Stop stops the replica gracefully and waits for it.
	Stop func()
}

// Component adapts a component, with configuration type C, to the suite. Members of a source
// (its pods, its endpoints) are given as strings of one address, or of the comma-separated
// addresses of one dual-stack member.
type Component[C any] struct {
	// MetricsPrefix starts the names of the component's metrics.
	MetricsPrefix string
	// Queue is the name label of the component's work queue metrics.
	Queue string
	// Clusters are the local cluster the component writes to, with an audit log, and the
	// remotes aws and gcp.
	Clusters *fixture.Clusters
	// ObjectsPerSource is how many local objects the component makes for a source whose
	// members are all of one address family.
	ObjectsPerSource int
	// RemoteSeries are the per-remote metrics (named without MetricsPrefix), besides remote_up
	// and the last sync time, whose series go with a remote removed from the configuration.
	RemoteSeries []string

	// Config returns a valid configuration reading from remotes, with leader election on a
	// Lease of the test's own and the identity "replica-a"; what the component writes is
	// removed when the test ends. The configurations of one test differ only in remotes.
	Config func(t *testing.T, remotes ...string) C
	// Election points into the leader election settings of cfg, which the suite reads and
	// whose identity it changes.
	Election func(cfg *C) *config.LeaderElection
	// Start runs a replica with cfg until Stop or the end of the test.
	Start func(t *testing.T, cfg C) *Instance

	// Namespace returns a namespace of the test in c for sources, named after suffix.
	Namespace func(t *testing.T, c *testenv.Cluster, suffix string) string
	// Create makes src in its remote with members.
	Create func(t *testing.T, src Source, members ...string)
	// Change gives src members as the remote would: members that stay are left as they are.
	Change func(t *testing.T, src Source, members ...string)
	// Delete deletes src from its remote.
	Delete func(t *testing.T, src Source)
	// InRemote is nil when src is still in its remote.
	InRemote func(src Source) error

	// Has is nil when the local objects of src hold exactly the addresses of members.
	Has func(cfg C, src Source, members ...string) error
	// Gone is nil when no local object of src is left.
	Gone func(cfg C, src Source) error
	// Versions returns key → "uid/resourceVersion" of the local objects the component made
	// for the sources of remote.
	Versions func(t *testing.T, cfg C, remote string) map[string]string
	// Owns tells whether the local object of a Versions key stands for src, and whether a
	// change of the addresses of src updates it.
	Owns func(src Source, key string) (owned, updated bool)
	// Writes returns the component's writes to the local cluster (Leases left out).
	Writes func(t *testing.T, cfg C) testenv.AuditEvents
	// Key is the Versions key of the object an audit event wrote, "" for other objects.
	Key func(e testenv.AuditEvent) string
	// InSync is nil when r's inventory of remote counts n sources, all of them in sync.
	InSync func(t *testing.T, r *Instance, remote string, n int) error

	// Varied makes, in both remotes, sources of every shape the component handles; it may
	// change cfg to cover a setting the other cases leave at its default.
	Varied func(t *testing.T, cfg *C) Varied
	// Foreign, when set, makes a local object that carries the labels of src but is not the
	// component's; the check it returns is nil while the object is as it was made.
	Foreign func(t *testing.T, cfg C, src Source) func() error
}

// Varied is what Component.Varied made.
type Varied struct {
	// Converged is nil when the local objects are what the component makes of the sources.
	Converged func() error
	// PerRemote is how many sources of each remote the component must track.
	PerRemote map[string]int
	// Creates is how many local objects a first run must at least create.
	Creates int
}

// Run runs every case of the suite against c, each as a subtest.
func Run[C any](t *testing.T, c Component[C]) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"RemoteOutageKeepsLocalObjects", c.testRemoteOutage},
		{"StartWithRemoteDown", c.testStartWithRemoteDown},
		{"RestartMakesNoWrites", c.testRestart},
		{"RemovedRemoteIsGarbageCollected", c.testRemovedRemote},
		{"LeaderHandover", c.testLeaderHandover},
	} {
		t.Run(tc.name, tc.run)
	}
}

// all is nil when every check is.
func all(checks ...func() error) func() error {
	return func() error {
		for _, c := range checks {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// metric is the sum of the series of the component's metric name (without the prefix) in r
// whose labels include l, and how many there are.
func (c *Component[C]) metric(t *testing.T, r *Instance, name string, l map[string]string) (float64, int) {
	t.Helper()
	return testenv.MetricSeries(t, r.Registry, c.MetricsPrefix+"_"+name, l)
}

// value is metric's sum alone: 0 for an absent series.
func (c *Component[C]) value(t *testing.T, r *Instance, name string, l map[string]string) float64 {
	t.Helper()
	v, _ := c.metric(t, r, name, l)
	return v
}

func remoteLabel(name string) map[string]string { return map[string]string{"remote": name} }

// up is nil when remote_up{remote} is want.
func (c *Component[C]) up(t *testing.T, r *Instance, remote string, want float64) func() error {
	return func() error {
		if v := c.value(t, r, "remote_up", remoteLabel(remote)); v != want {
			return fmt.Errorf("remote_up{remote=%s} = %v, want %v", remote, v, want)
		}
		return nil
	}
}

func (c *Component[C]) lastSync(t *testing.T, r *Instance, remote string) float64 {
	return c.value(t, r, "remote_last_sync_timestamp_seconds", remoteLabel(remote))
}

// ready is nil when r's /readyz answers 200.
func ready(t *testing.T, r *Instance) func() error {
	return func() error {
		if code, body := testenv.Readyz(t, r.AdminAddr); code != 200 {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	}
}

// readyDespite is nil when r's /readyz answers 200 although remote down is not reachable, and
// names no remote at all: readiness is local, or an outage would stall every rollout.
func readyDespite(t *testing.T, r *Instance, down string) func() error {
	return func() error {
		code, body := testenv.Readyz(t, r.AdminAddr)
		switch {
		case code != 200:
			return fmt.Errorf("/readyz while %s is down: %d %s", down, code, body)
		case strings.Contains(body, "remote"):
			return fmt.Errorf("/readyz names a remote: %s", body)
		}
		return nil
	}
}

// leads is nil when id holds the Lease of cfg.
func (c *Component[C]) leads(cfg C, id string) func() error {
	return func() error {
		le := c.Election(&cfg)
		h, err := c.Clusters.Local.LeaseHolder(le.Namespace, le.LeaseName)
		if err != nil {
			return err
		}
		if h != id {
			return fmt.Errorf("lease holder %q, want %q", h, id)
		}
		return nil
	}
}

func (c *Component[C]) has(cfg C, src Source, members ...string) func() error {
	return func() error { return c.Has(cfg, src, members...) }
}

func (c *Component[C]) gone(cfg C, src Source) func() error {
	return func() error { return c.Gone(cfg, src) }
}

func (c *Component[C]) inSync(t *testing.T, r *Instance, counts map[string]int) func() error {
	return func() error {
		for remote, n := range counts {
			if err := c.InSync(t, r, remote, n); err != nil {
				return err
			}
		}
		return nil
	}
}

// sources makes each source of want in its remote and returns the check that the local
// objects of all of them hold their members.
func (c *Component[C]) sources(t *testing.T, cfg C, want map[Source][]string) func() error {
	var checks []func() error
	for src, members := range want {
		c.Create(t, src, members...)
		checks = append(checks, c.has(cfg, src, members...))
	}
	return all(checks...)
}

// versionsOf returns the Versions of each remote, merged.
func (c *Component[C]) versionsOf(t *testing.T, cfg C, remotes ...string) map[string]string {
	out := map[string]string{}
	for _, r := range remotes {
		for k, v := range c.Versions(t, cfg, r) {
			out[k] = v
		}
	}
	return out
}

// settled waits until the component's writes stop: none for a second.
func (c *Component[C]) settled(t *testing.T, cfg C) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "writes settle", func() error {
		n := len(c.Writes(t, cfg))
		time.Sleep(time.Second)
		if m := len(c.Writes(t, cfg)); m != n {
			return fmt.Errorf("writes went from %d to %d in a second", n, m)
		}
		return nil
	})
}
