// Package bench measures semaphore-service-mirror against real API servers: convergence of a
// fresh local cluster on 1,000 remote Services (BenchmarkServiceMirror) and on 500 global
// services in three clusters next to a bare client writing the same objects
// (BenchmarkGlobalServices), propagation delay of endpoint changes at steady state, writes per
// change, and the controller's peak memory. Run it with `make bench`.
package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/testenv"
	"github.com/kube-semaphore/semaphore/test/measure"
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
	ctx := context.Background()

	awsClient := kubernetes.NewForConfigOrDie(measure.Unthrottled(aws))
	if err := local.EnsureNamespace(ctx, mirrorNS); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	remoteSvcs, remoteSlices := populate(b, aws, n, map[string]string{mirrorLabel: "true"},
		func(i, e int) string { return fmt.Sprintf("10.%d.%d.%d", i/250, i%250, e+1) })
	b.Logf("created %d remote Services with %d endpoints each in %v", n, endpoints, time.Since(start).Round(time.Millisecond))
	// The reference: a bare client with the controller's rate limit writes the same objects.
	bare := bareMirrors(b, local, []*testenv.Cluster{aws}, [][]*corev1.Service{remoteSvcs}, [][]*discoveryv1.EndpointSlice{remoteSlices})

	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	view := watchMirrorNamespace(b, local.Client)
	proc := measure.Binary(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir, local, aws, mirrorNS,
		"SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS)

	// Phase 1: a fresh local cluster converges on the remote.
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		return converged(view, n), fmt.Sprintf("%d services", len(view.services.GetStore().List()))
	})
	convergeCPU := proc.CPUSeconds(b)

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: steady state, one endpoint change at a time, spread over the Services.
	steady0 := proc.Writes(b)
	paced(changes, mirrorChangeEvery, func(i int) {
		j := (i * 37) % len(remoteSlices)
		remoteSlices[j] = view.change(b, awsClient, remoteSlices[j], fmt.Sprintf("198.19.%d.%d", i/250, i%250+1))
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
	last := handovers(b, local, proc, n, view, awsClient, remoteSlices)

	if n == services && os.Getenv(originalEnv) != "0" {
		last.Stop()
		compareOriginal(b, dir, local, aws, remoteSvcs, remoteSlices, convergence, rss)
	}
}

// handovers restarts proc, then fails it over to a standby, against the n mirrors in sync,
// reports both and returns the process left running. The change made during the failover is
// to slices[0], in the remote of client.
func handovers(b *testing.B, local *testenv.Cluster, proc *measure.Process, n int, view *localView, client kubernetes.Interface, slices []*discoveryv1.EndpointSlice) *measure.Process {
	proc, r := restart(b, local, proc, n)
	r.report(b, "restart", n)
	standby, f := failover(b, local, proc, n, func() *localChange {
		return changeOne(b, view, client, &slices[0], "198.18.0.1")
	})
	f.report(b, "failover", n)
	return standby
}

// compareOriginal runs the original on the same remote and reports its figures next to ours
// (convergence and peak RSS).
func compareOriginal(b *testing.B, dir string, local, remote *testenv.Cluster, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice, convergence time.Duration, rss float64) {
	orig := runOriginal(b, dir, local, remote, svcs, slices)
	b.ReportMetric(orig.converge.Seconds(), "original-converge-s")
	b.ReportMetric(orig.peakRSS/(1<<20), "original-peak-RSS-MiB")
	fmt.Printf("original semaphore-service-mirror, same remote: converged in %v with %d writes (%d Services, %d complete Endpoints); writes at rest over 5s: %d; peak RSS %.1f MiB\n",
		orig.converge.Round(time.Millisecond), orig.writes, orig.services, orig.ready, orig.idle, orig.peakRSS/(1<<20))
	fmt.Printf("service-mirror / original at %d Services: convergence %.3f, peak RSS %.2f\n",
		len(svcs), convergence.Seconds()/orig.converge.Seconds(), rss/orig.peakRSS)
}

// converged reports whether every one of the n mirror Services and slices is complete.
func converged(v *localView, n int) bool {
	return len(v.services.GetStore().List()) >= n && v.completeSlices() >= n
}
