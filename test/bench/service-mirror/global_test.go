package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	globalServices = 500
	globalChanges  = 100
	// The bare reference is a client as the controller has it by default: 200 QPS, burst
	// 400, as many goroutines as the controller has workers.
	bareQPS     = 200
	bareBurst   = 400
	bareWorkers = 8
	bareNS      = "bare-reference"
	bareAgent   = "semaphore-bench-bare"
)

// globalClusters are the clusters of the global services benchmark, local first. The
// definition used is aws's: the first in name order.
var globalClusters = []string{"local", "aws", "gcp"}

// BenchmarkGlobalServices measures global services: 500 Services present in the local cluster
// and two remotes with one slice of 10 endpoints in each. A bare client writing the same 2,000
// objects at the controller's default rate limit is the reference; the controller, a separate
// process, converges from empty, then 100 remote endpoint changes are counted in the audit log.
func BenchmarkGlobalServices(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	clusters := testenv.Start(b, testenv.Options{Audit: true}, globalClusters...)
	local := clusters[0]

	start := time.Now()
	sources := make([]*populated, len(clusters))
	for ci, c := range clusters {
		sources[ci] = populate(b, c, globalServices, map[string]string{global.LabelGlobalService: "true"},
			func(i, e int) string { return fmt.Sprintf("10.%d.%d.%d", ci+1, i/25, (i%25)*10+e+1) })
	}
	b.Logf("created %d global Services with %d endpoints each in each of %d clusters in %v",
		globalServices, endpoints, len(clusters), time.Since(start).Round(time.Millisecond))

	// The reference: the same objects, written by a bare client, then removed.
	bare := bareReference(b, local, sources)

	measure.Namespaces(b, local, mirrorNS)
	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	view := watchMirrorNamespace(b, local.Client)
	proc := measure.BinaryReading(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir,
		local, clusters[1:], mirrorNS, "SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS)

	// Phase 1: a fresh local cluster converges on the three clusters' global services.
	writes0 := len(local.WritesBut(b, userAgent))
	t0 := time.Now()
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		return globalConverged(view)
	})
	first := time.Duration(view.firstSeen.Load() - t0.UnixNano())
	byVerb := writesByVerb(local.WritesBut(b, userAgent)[writes0:])

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: one endpoint change at a time in a remote slice, spread over the services and
	// the two remotes.
	steady0 := proc.Writes(b)
	measure.Paced(globalChanges, changeEvery, func(i int) {
		r, j := 1+i%2, (i*37)%globalServices
		view.change(b, sources[r], j, fmt.Sprintf("10.200.%d.%d", i/250, i%250+1))
	})
	view.latencies.Wait(b, globalChanges, proc.Log)
	time.Sleep(2 * time.Second)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)

	ratio := convergence.Seconds() / bare.Seconds()
	p50, p99, _ := view.latencies.Percentiles()
	measure.Report(b, convergence, &view.latencies, float64(steadyWrites)/globalChanges, idleWrites, rss)
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(first.Seconds(), "first-write-s")
	b.ReportMetric(float64(convergeWrites), "converge-writes")
	objects := globalServices * (1 + len(clusters))
	fmt.Printf("global services: %d Services x %d clusters x %d endpoints converged in %v (first global slice seen at %v) with %d writes for %d objects (%s)\n",
		globalServices, len(clusters), endpoints, convergence.Round(time.Millisecond), first.Round(time.Millisecond), convergeWrites, objects, byVerb)
	fmt.Printf("global services: bare client (QPS %d, burst %d, %d goroutines) wrote the %d objects in %v; controller/bare %.2f (aim <= 1.5)\n",
		bareQPS, bareBurst, bareWorkers, objects, bare.Round(time.Millisecond), ratio)
	fmt.Printf("global services: steady state, %d remote changes at %v intervals: p50 %v, p99 %v, %.2f writes per change\n",
		globalChanges, changeEvery, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), float64(steadyWrites)/globalChanges)
	fmt.Printf("global services: writes at rest over 5s: %d; controller peak RSS %.1f MiB\n", idleWrites, rss/(1<<20))
}

// bareReference writes the objects the controller will write, made by package global from the
// same sources, as bareWrite does, and returns the time it took.
func bareReference(b *testing.B, local *testenv.Cluster, sources []*populated) time.Duration {
	want := make([]bareObjects, globalServices)
	for i := range globalServices {
		k := global.Key{Namespace: sources[0].svcs[i].Namespace, Name: sources[0].svcs[i].Name}
		want[i].svc = global.Service(k, bareNS, global.DefinitionOf(globalClusters[1], sources[1].svcs[i]))
		for ci, name := range globalClusters {
			want[i].slices = append(want[i].slices, global.EndpointSlices(k, bareNS, name, sources[ci].slices[i:i+1], nil)...)
		}
	}
	took, _ := bareWrite(b, local, want)
	return took
}

// globalConverged reports whether every global Service follows the definition used (aws's)
// and every global slice holds its endpoints, and how far it got.
func globalConverged(v *localView) (bool, string) {
	services := 0
	for _, o := range v.services.GetStore().List() {
		if o.(*corev1.Service).Annotations[global.AnnotationDefinitionFrom] == globalClusters[1] {
			services++
		}
	}
	complete := v.completeSlices()
	done := services == globalServices && complete >= globalServices*len(globalClusters)
	return done, fmt.Sprintf("%d of %d Services, %d of %d slices", services, globalServices, complete, globalServices*len(globalClusters))
}

// writesByVerb summarises writes as "create services 500, ..." in a fixed order.
func writesByVerb(events testenv.AuditEvents) string {
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Verb+" "+e.ObjectRef.Resource]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
