package soak

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// What the soak asks of the controllers after the churn. The bounds are stated here and in
// docs/performance.md: what a controller may hold at the end, and how much a pod that lived
// through the whole soak may have grown (a leak grows with the churn; a cache does not).
const (
	soakMaxGoroutines = 300
	// soakMaxRSS is half the memory limit the charts give every controller (256Mi): room to
	// spare before the kubelet would kill one. semaphore-wireguard holds most here, as it runs
	// the userspace WireGuard (whose receive batches alone take megabytes per device).
	soakMaxRSS = 128 << 20
	// soakGoroutineGrowth is how many more goroutines a pod may run at the end than its
	// component ran in its cluster before the churn, in the busiest pod (a standby that took
	// over runs the leader's): connections the HTTP client keeps, a watch restarted: a few, not
	// one per change.
	soakGoroutineGrowth = 25
)

// podFootprint is what a controller pod runs and holds.
type podFootprint struct {
	layout.Controller
	Goroutines float64
	RSS        float64 // bytes
	// Heap is the Go heap in use (bytes): what the program holds, of RSS.
	Heap float64
}

// footprint reads every controller's goroutines and resident memory from its /metrics, by pod
// UID.
func footprint(ctx context.Context, l *env.Lab) (map[string]podFootprint, error) {
	out := map[string]podFootprint{}
	for _, c := range l.Record().Controllers {
		samples, err := status.Scrape(ctx, c.Admin, "", 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", c.Component, c.Where(), err)
		}
		g, _ := testbed.SampleSum(samples, "go_goroutines", nil)
		rss, _ := testbed.SampleSum(samples, "process_resident_memory_bytes", nil)
		heap, _ := testbed.SampleSum(samples, "go_memstats_heap_inuse_bytes", nil)
		out[c.PodUID] = podFootprint{Controller: c, Goroutines: g, RSS: rss, Heap: heap}
	}
	return out, nil
}

// checkFootprint compares every controller's footprint now with the bounds, and with its own
// before the churn when it lived through it; it prints the peaks Prometheus saw over the last
// over (the soak).
func checkFootprint(ctx context.Context, l *env.Lab, before map[string]podFootprint, over time.Duration) []string {
	after, err := footprint(ctx, l)
	if err != nil {
		return []string{fmt.Sprintf("the controllers' footprint after the soak: %v", err)}
	}
	busiest := map[[2]string]float64{} // component, cluster: the most goroutines before
	for _, b := range before {
		k := [2]string{b.Component, b.Cluster}
		busiest[k] = max(busiest[k], b.Goroutines)
	}
	var problems []string
	fmt.Fprintf(l.Out(), "  footprint at the end (goroutines, resident memory, Go heap in use; before the churn for the pods that lived through it):\n")
	for _, c := range l.Record().Controllers {
		a := after[c.PodUID]
		line := fmt.Sprintf("    %-24s %-44s %4.0f goroutines  %5.1f MiB  heap %5.1f MiB", c.Component, c.Where(), a.Goroutines, a.RSS/(1<<20), a.Heap/(1<<20))
		if b, ok := before[c.PodUID]; ok {
			line += fmt.Sprintf("   (before: %4.0f, %5.1f MiB, heap %5.1f MiB)", b.Goroutines, b.RSS/(1<<20), b.Heap/(1<<20))
		}
		if most := busiest[[2]string{c.Component, c.Cluster}]; a.Goroutines > most+soakGoroutineGrowth {
			problems = append(problems, fmt.Sprintf("%s %s runs %.0f goroutines after the soak, its busiest pod %.0f before: more than %d more", c.Component, c.Where(), a.Goroutines, most, soakGoroutineGrowth))
		}
		fmt.Fprintln(l.Out(), line)
		if a.Goroutines > soakMaxGoroutines {
			problems = append(problems, fmt.Sprintf("%s %s runs %.0f goroutines after the soak (bound %d)", c.Component, c.Where(), a.Goroutines, soakMaxGoroutines))
		}
		if a.RSS > soakMaxRSS {
			problems = append(problems, fmt.Sprintf("%s %s holds %.1f MiB after the soak (bound %d MiB)", c.Component, c.Where(), a.RSS/(1<<20), soakMaxRSS>>20))
		}
	}
	return append(problems, printPeaks(ctx, l, over)...)
}

// printPeaks prints, per component, the most goroutines and resident memory any of its pods
// had over the last over, as Prometheus scraped them.
func printPeaks(ctx context.Context, l *env.Lab, over time.Duration) []string {
	rec := l.Record()
	window := strconv.Itoa(int(over.Seconds())) + "s"
	var problems []string
	for _, m := range []struct{ metric, unit string }{{"go_goroutines", ""}, {"process_resident_memory_bytes", "MiB"}, {"go_memstats_heap_inuse_bytes", "MiB"}} {
		r, err := promapi.Query(ctx, rec.Prometheus.URL, fmt.Sprintf("max by (job) (max_over_time(%s[%s]))", m.metric, window))
		if err != nil {
			problems = append(problems, fmt.Sprintf("peak %s over the soak: %v", m.metric, err))
			continue
		}
		var parts []string
		for _, res := range r {
			v, _ := strconv.ParseFloat(fmt.Sprint(res.Value[1]), 64)
			if m.unit == "MiB" {
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", res.Metric["job"], v/(1<<20)))
			} else {
				parts = append(parts, fmt.Sprintf("%s %.0f", res.Metric["job"], v))
			}
		}
		fmt.Fprintf(l.Out(), "  peak %s over the soak: %s\n", m.metric, strings.Join(parts, ", "))
	}
	return problems
}
