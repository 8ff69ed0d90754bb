package env

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// build is one of the binaries buildBinaries builds: what it says while building, how, and
// where the path goes.
type build struct {
	msg   string
	build func() (string, error)
	path  *string
}

// buildBinaries builds (or finds in their caches) everything the lab runs, in parallel.
func (l *Lab) buildBinaries(ctx context.Context) error {
	if err := l.labRelease.SetVersion(ctx); err != nil {
		return err
	}
	builds := []build{
		// The test harness builds these through ci/kube-binaries.sh and ci/coredns.sh, which
		// cache them in ~/.cache/semaphore and return at once when they are there.
		{"Kubernetes (first run only, ~12 min)", kubeBinaries, &l.bin.kube},
		{"CoreDNS (first run only, ~2.5 min)", testbed.CoreDNSBinary, &l.bin.coredns},
		{"helm (first run only, ~2 min)", helmBinary, &l.bin.helm},
		{"Calico (first run only, ~4 min)", calicoBinaries, &l.bin.calico},
		{"kubectl-semaphore (the release's archive, installed with krew)", func() (string, error) { return l.labRelease.InstallPlugin(ctx) }, &l.bin.plugin},
		{"egress proxy", func() (string, error) { return testbed.BuildBinary(egressPackage, l.Path("bin")) }, &l.bin.egress},
		{"load balancer", func() (string, error) { return testbed.BuildBinary(loadBalancerPackage, l.Path("bin")) }, &l.bin.loadBalancer},
	}
	errs := make([]error, len(builds))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		pending = map[string]bool{}
	)
	start := time.Now()
	for i, b := range builds {
		l.Logf("building %s…", b.msg)
		name, _, _ := strings.Cut(b.msg, " (")
		pending[name] = true
		wg.Go(func() {
			path, err := b.build()
			mu.Lock()
			delete(pending, name)
			mu.Unlock()
			if took := time.Since(start); took > 10*time.Second && err == nil {
				l.Logf("built %s in %s", name, took.Round(time.Second))
			}
			if err != nil {
				errs[i] = err
				return
			}
			*b.path = path
		})
	}
	l.sayWhileBuilding(&wg, &mu, pending, start)
	return errors.Join(errs...)
}

// sayWhileBuilding waits for wg, saying every half minute what is still pending: a cold first
// run builds for minutes.
func (l *Lab) sayWhileBuilding(wg *sync.WaitGroup, mu *sync.Mutex, pending map[string]bool, start time.Time) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			mu.Lock()
			names := slices.Sorted(maps.Keys(pending))
			mu.Unlock()
			l.Logf("still building %s (%s so far; the results are cached for the next runs)…", strings.Join(names, ", "), time.Since(start).Round(time.Second))
		}
	}
}

// kubeBinaries builds (or finds in the cache) etcd and the Kubernetes binaries of a cluster and
// its nodes with ci/kube-binaries.sh, and points envtest at them.
func kubeBinaries() (string, error) {
	dir, err := testbed.CIToolPath(nil, "kube-binaries.sh", "all")
	if err != nil {
		return "", err
	}
	return dir, os.Setenv("KUBEBUILDER_ASSETS", dir)
}

// helmBinary builds helm (or finds it in the cache) with ci/helm.sh.
func helmBinary() (string, error) { return testbed.CIToolPath(nil, "helm.sh") }
