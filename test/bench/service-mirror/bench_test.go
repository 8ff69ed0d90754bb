// Package bench measures semaphore-service-mirror against real API servers: convergence of a
// fresh local cluster on 1,000 remote Services (BenchmarkServiceMirror), on 500 global services
// in three clusters (BenchmarkGlobalServices) and on 500 Services exported in three clusters
// with the Multi-Cluster Services API (BenchmarkMultiClusterServices), the last two next to a
// bare client writing the same objects, propagation delay of endpoint changes at steady state,
// writes per change, and the controller's peak memory; many remotes at once
// (BenchmarkManyRemotes); and a quiet remote's delay while another churns, next to its delay
// alone (BenchmarkChurningRemote). Run it with `make bench`.
package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	services   = 1000
	endpoints  = 10
	namespaces = 10
	changes    = 500
	// mirrorChangeEvery paces the mirrors' changes at 50 per second; changeEvery (20 per
	// second) the other benchmarks'.
	mirrorChangeEvery = 20 * time.Millisecond
	changeEvery       = 50 * time.Millisecond
	mirrorNS          = "semaphore"
	userAgent         = "semaphore-service-mirror"
	mirrorLabel       = "mirror.semaphore.uw.io/mirror-service"
	convergeWait      = 10 * time.Minute
	// longEnv set to 1 runs BenchmarkServiceMirror at 5,000 and 10,000 Services too, to show
	// how memory grows: minutes more, so not by default.
	longEnv = "SEMAPHORE_BENCH_LONG"
	// sizesEnv, a comma-separated list of numbers of Services, runs BenchmarkServiceMirror at
	// those sizes only.
	sizesEnv = "SEMAPHORE_BENCH_SERVICES"
	// failoversEnv, a number, fails the service mirror over that many times, back and forth
	// between two replicas, each with a change in flight (1 by default).
	failoversEnv = "SEMAPHORE_BENCH_FAILOVERS"
)

// BenchmarkServiceMirror measures the service mirror on 1,000 remote Services (and, with
// SEMAPHORE_BENCH_LONG=1, on 5,000 and 10,000) of 10 endpoints each; at 1,000 the original
// semaphore-service-mirror is measured on the same remote after it, unless
// SEMAPHORE_BENCH_ORIGINAL=0.
func BenchmarkServiceMirror(b *testing.B) {
	sizes := []int{services}
	if os.Getenv(longEnv) == "1" {
		sizes = append(sizes, 5000, 10000)
	}
	if only := os.Getenv(sizesEnv); only != "" {
		sizes = nil
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want sizes such as 1000,5000", sizesEnv, only)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchServiceMirror(b, n) })
	}
}

func benchServiceMirror(b *testing.B, n int) {
	b.StopTimer()
	dir := b.TempDir()
	clusters := testenv.Start(b, testenv.Options{Audit: true}, "local", "aws")
	local, aws := clusters[0], clusters[1]

	measure.Namespaces(b, local, mirrorNS)
	start := time.Now()
	remote := populate(b, aws, n, map[string]string{mirrorLabel: "true"},
		func(i, e int) string { return fmt.Sprintf("10.%d.%d.%d", 100+i/250, i%250, e+1) }) // outside the local Service range (10.0.0.0/16), which no remote address may be in
	b.Logf("created %d remote Services with %d endpoints each in %v", n, endpoints, time.Since(start).Round(time.Millisecond))
	// The reference: a bare client with the controller's rate limit writes the same objects.
	bare, _ := bareMirrors(b, local, []*populated{remote})

	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	view := watchMirrorNamespace(b, local.Client)
	proc := measure.Binary(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir, local, aws, mirrorNS,
		"SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS)

	// Phase 1: a fresh local cluster converges on the remote.
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		return converged(view, n), fmt.Sprintf("%d services", view.serviceCount())
	})
	convergeCPU := proc.CPUSeconds(b)

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: steady state, one endpoint change at a time, spread over the Services.
	steady0 := proc.Writes(b)
	measure.Paced(changes, mirrorChangeEvery, func(i int) {
		view.change(b, remote, (i*37)%n, fmt.Sprintf("198.19.%d.%d", i/250, i%250+1))
	})
	view.latencies.Wait(b, changes, proc.Log)
	time.Sleep(2 * time.Second)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)

	p50, p99, _ := view.latencies.Percentiles()
	measure.Report(b, convergence, &view.latencies, float64(steadyWrites)/changes, idleWrites, rss)
	b.ReportMetric(convergeCPU, "converge-cpu-s")
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(convergence.Seconds()/bare.Seconds(), "ratio")
	fmt.Printf("service-mirror: %d Services x %d endpoints converged in %v with %d writes (%d objects), %.1f s of CPU; bare client %v (controller/bare %.2f)\n",
		n, endpoints, convergence.Round(time.Millisecond), convergeWrites, 2*n, convergeCPU, bare.Round(time.Millisecond), convergence.Seconds()/bare.Seconds())
	fmt.Printf("service-mirror: steady state, %d changes at %v intervals: p50 %v, p99 %v, %.2f writes per change\n",
		changes, mirrorChangeEvery, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), float64(steadyWrites)/changes)
	fmt.Printf("service-mirror: %d Services: writes at rest over 5s: %d; controller peak RSS %.1f MiB\n", n, idleWrites, rss/(1<<20))

	// Phases 4 and 5: restarted, then failed over to a standby, against mirrors in sync.
	last := handovers(b, local, proc, n, view, remote)

	if n == services && os.Getenv(originalEnv) != "0" {
		last.Stop()
		compareOriginal(b, dir, local, remote, convergence, rss)
	}
}

// handovers restarts proc, then fails it over to a standby and back as often as failovers
// says, against the n mirrors in sync; it reports them and returns the process left running.
// Each failover changes the first slice of remote as the leader stops: a change in flight then
// is written once, by one replica or the other.
func handovers(b *testing.B, local *testenv.Cluster, proc *measure.Process, n int, view *localView, remote *populated) *measure.Process {
	proc, r := restart(b, local, proc, n)
	r.report(b, "restart", n)
	ids := [2]string{"replica-a", "replica-b"} // the leader's now, then its standby's
	var all []handover
	for i := range failovers(b) {
		standby, f := failover(b, local, proc, ids[(i+1)%2], fmt.Sprintf("failover-%d", i+1), n, func() *localChange {
			return changeOne(b, view, remote, fmt.Sprintf("198.18.%d.%d", i/250, i%250+1))
		})
		if i == 0 {
			f.report(b, "failover", n)
		}
		if objs := twice(f.writes); len(objs) > 0 {
			b.Errorf("failover %d wrote %v more than once:%s", i+1, objs, writeKinds(f.writes))
		}
		all = append(all, f)
		proc = standby
	}
	if len(all) > 1 {
		reportFailovers(b, all)
	}
	return proc
}

// failovers is the number of failovers SEMAPHORE_BENCH_FAILOVERS asks for, 1 by default.
func failovers(b *testing.B) int {
	v := os.Getenv(failoversEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a number of failovers, at least 1", failoversEnv, v)
	}
	return n
}

// reportFailovers prints the spread of several failovers and the writes they made.
func reportFailovers(b *testing.B, all []handover) {
	var lead, caughtUp []time.Duration
	writes, duplicated := 0, 0
	for _, h := range all {
		lead, caughtUp = append(lead, h.lead), append(caughtUp, h.caughtUp)
		writes += len(h.writes)
		if len(twice(h.writes)) > 0 {
			duplicated++
		}
	}
	slices.Sort(lead)
	slices.Sort(caughtUp)
	b.ReportMetric(float64(duplicated), "failovers-with-a-duplicate")
	fmt.Printf("service-mirror: %d failovers: leading after %v to %v, caught up after %v to %v; %d writes in all, %d failovers wrote an object twice\n",
		len(all), lead[0].Round(time.Millisecond), lead[len(lead)-1].Round(time.Millisecond),
		caughtUp[0].Round(time.Millisecond), caughtUp[len(caughtUp)-1].Round(time.Millisecond), writes, duplicated)
}

// compareOriginal runs the original on the same remote and reports its figures next to ours
// (convergence and peak RSS).
func compareOriginal(b *testing.B, dir string, local *testenv.Cluster, remote *populated, convergence time.Duration, rss float64) {
	orig := runOriginal(b, dir, local, remote)
	b.ReportMetric(orig.converge.Seconds(), "original-converge-s")
	b.ReportMetric(orig.peakRSS/(1<<20), "original-peak-RSS-MiB")
	fmt.Printf("original semaphore-service-mirror, same remote: converged in %v with %d writes (%d Services, %d complete Endpoints); writes at rest over 5s: %d; peak RSS %.1f MiB\n",
		orig.converge.Round(time.Millisecond), orig.writes, orig.services, orig.ready, orig.idle, orig.peakRSS/(1<<20))
	fmt.Printf("service-mirror / original at %d Services: convergence %.3f, peak RSS %.2f\n",
		len(remote.svcs), convergence.Seconds()/orig.converge.Seconds(), rss/orig.peakRSS)
}

// converged reports whether every one of the n mirror Services and slices is complete.
func converged(v *localView, n int) bool {
	return v.serviceCount() >= n && v.completeSlices() >= n
}
