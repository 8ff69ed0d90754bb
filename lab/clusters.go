package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// clusterSpec is one cluster of the lab.
type clusterSpec struct {
	Name string
	// ServiceCIDR is the cluster's Service range. The ranges do not overlap, as in a real
	// multi-cluster network, so a ClusterIP tells which cluster it belongs to.
	ServiceCIDR string
	// PodCIDR is where the sample pods' IPs come from: a part of 198.18.0.0/15, the benchmark
	// range, so nothing in the lab ever names a real address.
	PodCIDR string
}

// clusterSpecs are the lab's clusters, named as in the Semaphore blog post: two clouds and an
// on-prem data centre.
var clusterSpecs = []clusterSpec{
	{Name: "aws", ServiceCIDR: "10.101.0.0/16", PodCIDR: "198.18.1.0/24"},
	{Name: "gcp", ServiceCIDR: "10.102.0.0/16", PodCIDR: "198.18.2.0/24"},
	{Name: "merit", ServiceCIDR: "10.103.0.0/16", PodCIDR: "198.18.3.0/24"},
}

// semaphoreNamespace is the namespace the umbrella chart is installed in: the controllers'
// Leases and the service mirror's mirrors live there.
const semaphoreNamespace = "semaphore"

func clusterNames() []string {
	names := make([]string, len(clusterSpecs))
	for i, c := range clusterSpecs {
		names[i] = c.Name
	}
	return names
}

// remotesOf are the clusters that cluster reads from: all the others.
func remotesOf(cluster string) []string {
	var remotes []string
	for _, c := range clusterSpecs {
		if c.Name != cluster {
			remotes = append(remotes, c.Name)
		}
	}
	return remotes
}

// buildBinaries builds (or finds in their caches) everything the lab runs, in parallel.
func (l *lab) buildBinaries(ctx context.Context) error {
	builds := []struct {
		msg   string
		build func() (string, error)
		path  *string
	}{
		// The test harness builds these through ci/kube-binaries.sh and ci/coredns.sh, which
		// cache them in ~/.cache/semaphore and return at once when they are there.
		{"kube-apiserver and etcd (first run only, ~6 min)", testenv.AssetsDir, nil},
		{"CoreDNS (first run only, ~2.5 min)", testenv.CoreDNSBinary, &l.bin.coredns},
		{"semaphore-service-mirror", func() (string, error) {
			return l.goBuild(ctx, "semaphore-service-mirror", "./components/service-mirror")
		}, &l.bin.serviceMirror},
		{"semaphore-policy", func() (string, error) {
			return l.goBuild(ctx, "semaphore-policy", "./components/policy")
		}, &l.bin.policy},
	}
	errs := make([]error, len(builds))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		pending = map[string]bool{}
	)
	start := time.Now()
	for i, b := range builds {
		l.logf("building %s…", b.msg)
		name, _, _ := strings.Cut(b.msg, " (")
		pending[name] = true
		wg.Go(func() {
			path, err := b.build()
			mu.Lock()
			delete(pending, name)
			mu.Unlock()
			if took := time.Since(start); took > 10*time.Second && err == nil {
				l.logf("built %s in %s", name, took.Round(time.Second))
			}
			if err != nil {
				errs[i] = err
				return
			}
			if b.path != nil {
				*b.path = path
			}
		})
	}
	// A cold first run builds for minutes: say every half minute what is still being built.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return errors.Join(errs...)
		case <-tick.C:
			mu.Lock()
			names := slices.Sorted(maps.Keys(pending))
			mu.Unlock()
			l.logf("still building %s (%s so far; the results are cached for the next runs)…", strings.Join(names, ", "), time.Since(start).Round(time.Second))
		}
	}
}

// goBuild builds the command in pkg into the lab's bin directory.
func (l *lab) goBuild(ctx context.Context, name, pkg string) (string, error) {
	out := l.path("bin", name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = testenv.RepoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return out, nil
}

// startClusters starts one API server per cluster, in parallel, each with the GlobalNetworkSet
// CRD that stands in for the Calico API server (calicoCRD).
func (l *lab) startClusters(context.Context) error {
	// envtest keeps each API server's certificates and etcd's data in temporary directories.
	// Under the lab directory they are removed with it even after a lab that was killed, and
	// the processes' command lines name the lab, which tells them apart from those of tests.
	tmp := l.path("tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return err
	}
	l.logf("starting clusters %s (a kube-apiserver and an etcd each)…", strings.Join(clusterNames(), ", "))
	clusters := make([]*testenv.Cluster, len(clusterSpecs))
	errs := make([]error, len(clusterSpecs))
	var wg sync.WaitGroup
	for i, spec := range clusterSpecs {
		wg.Go(func() {
			clusters[i], errs[i] = testenv.StartCluster(spec.Name, testenv.Options{
				Dir:          l.path("clusters", spec.Name),
				ServiceCIDRs: spec.ServiceCIDR,
				// envtest takes single files as well as directories.
				CRDDirs: []string{calicoCRD},
			})
		})
	}
	wg.Wait()

	var started []*testenv.Cluster
	for i, c := range clusters {
		if c == nil {
			continue
		}
		started = append(started, c)
		l.clusters[c.Name] = c
		l.mu.Lock()
		l.state.Clusters = append(l.state.Clusters, ClusterState{
			Name:             c.Name,
			Server:           c.Config.Host,
			ServiceCIDR:      clusterSpecs[i].ServiceCIDR,
			Kubeconfig:       c.Kubeconfig,
			DirectKubeconfig: c.DirectKubeconfig,
		})
		l.mu.Unlock()
	}
	l.onTeardown(func() {
		var wg sync.WaitGroup
		for _, c := range started {
			wg.Go(c.Stop)
		}
		wg.Wait()
		l.logf("stopped the API servers")
	})
	// envtest starts kube-apiserver and etcd as our children but in their own process groups
	// and without a parent-death signal: remember them, so that the reaper or `lab down` can
	// stop them when the lab dies without tearing down.
	l.recordChildren("kube-apiserver", "etcd")
	return errors.Join(errs...)
}
