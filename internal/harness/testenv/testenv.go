// Package testenv is what Semaphore's tests run on: thin testing.TB wrappers over package
// testbed (API-server clusters, CoreDNS, network namespaces, binaries), which fail the test
// instead of returning an error, clean up when it ends and skip under -short; and helpers only
// tests need (Eventually, Hold, MetricSeries, LogWriter, RunBinary, ...). What needs no
// testing.TB (RepoRoot, Ping, Scrape, ...) tests call in testbed itself: nothing is here twice.
//
// Everything that needs kube-apiserver and etcd, CoreDNS, root and namespaces of its own, or
// builds a binary skips the test under -short, before it looks for or builds anything, so that
// `go test -short ./...` runs the pure tests alone.
package testenv

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// Options tune the API servers.
type Options = testbed.Options

// AuditEvent is the part of an audit log entry tests look at.
type AuditEvent = testbed.AuditEvent

// AuditEvents are audit log entries, printable one per line.
type AuditEvents = testbed.AuditEvents

// Cluster is one running API server, with the methods tests use on top of testbed's.
type Cluster struct{ *testbed.Cluster }

// Start starts one cluster per name, in parallel, and stops them when the test ends. It skips
// the test under -short.
func Start(t testing.TB, opts Options, names ...string) []*Cluster {
	t.Helper()
	SkipIfShort(t, "kube-apiserver and etcd")
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			o := opts
			if o.Dir == "" {
				o.Dir = filepath.Join(t.TempDir(), name)
			}
			clusters[i], errs[i] = StartCluster(name, o)
		})
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			t.Cleanup(c.Stop)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("starting API servers: %v", err)
	}
	return clusters
}

// CRDs is the directory of the CustomResourceDefinitions a component's tests serve (the Calico
// resources it reads or writes), for Options.CRDDirs: component is policy or wireguard.
func CRDs(component string) string {
	return filepath.Join(testbed.RepoRoot(), "components", component, "testdata", "crds")
}

// StartCluster is testbed.StartCluster for a TestMain, which has no testing.TB to fail, clean up
// or skip: tests use Start. Stop the cluster with Stop.
func StartCluster(name string, opts Options) (*Cluster, error) {
	c, err := testbed.StartCluster(name, opts)
	if err != nil {
		return nil, err
	}
	return &Cluster{c}, nil
}

// Cut makes c unreachable through its proxy (the kubeconfig controllers use) and restores it
// when the test ends, whatever happens to the test: clusters are shared between tests.
func (c *Cluster) Cut(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		if err := c.SetReachable(true); err != nil {
			t.Errorf("restoring %s: %v", c.Name, err)
		}
	})
	if err := c.SetReachable(false); err != nil {
		t.Fatal(err)
	}
}

// Restore makes c reachable again after Cut.
func (c *Cluster) Restore(t testing.TB) {
	t.Helper()
	if err := c.SetReachable(true); err != nil {
		t.Fatal(err)
	}
}

// WritesBut returns the write requests in the audit log whose user agent starts with
// userAgent, leaving out those to Leases: renewing a lease is leader election's heartbeat,
// made every retry period whether or not anything changes.
func (c *Cluster) WritesBut(t testing.TB, userAgent string) AuditEvents {
	t.Helper()
	events, err := c.Writes(userAgent)
	if err != nil {
		t.Fatal(err)
	}
	var out AuditEvents
	for _, e := range events {
		if e.ObjectRef.Resource != "leases" {
			out = append(out, e)
		}
	}
	return out
}

// WriteRemoteKubeconfig copies the kubeconfig file at kubeconfig (a cluster's Kubeconfig
// through its proxy, or its DirectKubeconfig) to where a controller reads the remote called
// name from its remotes directory dir.
func WriteRemoteKubeconfig(t testing.TB, dir, name, kubeconfig string) {
	t.Helper()
	if err := testbed.WriteRemoteKubeconfig(dir, name, kubeconfig); err != nil {
		t.Fatal(err)
	}
}

// SkipIfShort skips the test under -short, saying what it needs that a pure test does not:
// `go test -short ./...` runs every pure test with no API-server binaries, root or network.
func SkipIfShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs " + needs)
	}
}

// SkipForMissing skips the test for want of something that `make test` installs or builds
// before the tests run (a Debian package of ci/node-packages.sh, a binary of ci/kube-binaries.sh),
// saying what is missing and what provides it. In CI (CI=true) it fails the test instead: CI ran
// that install step, so a skip there would hide a broken one behind a green run.
func SkipForMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("in CI, where make test installs it first: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}

// inCI reports whether the tests run in CI, which sets CI=true.
func inCI() bool { return os.Getenv("CI") == "true" }

// Short is testing.Short for a TestMain, before m.Run has parsed the flags: a TestMain that
// starts what pure tests do not need asks it first.
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}
