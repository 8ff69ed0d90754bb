package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/internal/testbed"
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

// verify checks the mesh after the churn: it equals what the clusters hold (and again once the
// churn's objects are gone), `kubectl semaphore check` passes in every cluster, the lab's own
// status is healthy, the footprint is within bounds and the alerts are quiet.
func (s *soakRun) verify(ctx context.Context, start time.Time, before map[string]podFootprint) {
	l := s.l
	if err := l.waitAvailable(ctx, soakSettle); err != nil {
		s.problem("after the churn: %v", err)
	}
	if err := l.rediscoverControllers(ctx); err != nil {
		s.problem("finding the controllers after the churn: %v", err)
	}
	s.waitInSync(ctx, "with the churn's objects")
	s.checkWithPlugin(ctx)
	if err := s.removeWorkloads(ctx); err != nil {
		s.problem("removing the churn's objects: %v", err)
	}
	// The lab's status expects what the pods are now (aws's borrowed addresses among them).
	if err := l.recordPods(ctx); err != nil {
		s.problem("recording the pods after the churn: %v", err)
	}
	s.waitInSync(ctx, "once the churn's objects are deleted")
	if _, problems := waitReady(ctx, l.snapshot(), 2*time.Minute, l.exited); len(problems) > 0 {
		for _, p := range problems {
			s.problem("lab status after the soak: %s", p)
		}
	} else {
		fmt.Fprintf(l.out, "  the lab's status is healthy again (mirrors, sets, global service, DNS, readiness, Prometheus targets)\n")
	}
	s.checkFootprint(ctx, before, time.Since(start))
	s.checkAlerts(ctx, time.Since(start))
}

// waitInSync waits until the mesh equals what the clusters hold, and says how long that took.
func (s *soakRun) waitInSync(ctx context.Context, when string) {
	start := time.Now()
	var drift []string
	var size meshSize
	var lastErr error
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, soakConverge, true, func(ctx context.Context) (bool, error) {
		drift, size, lastErr = s.l.meshDrift(ctx)
		return lastErr == nil && len(drift) == 0, nil
	})
	switch {
	case lastErr != nil:
		s.problem("comparing the mesh %s: %v", when, lastErr)
	case len(drift) > 0:
		if len(drift) > 10 {
			drift = append(drift[:10], fmt.Sprintf("and %d more", len(drift)-10))
		}
		s.problem("the mesh differs from what the clusters hold %s, %s on: %s", when, soakConverge, strings.Join(drift, "; "))
	default:
		fmt.Fprintf(s.l.out, "  every mirror, global service and network set equals what the clusters hold %s (%s; in sync after %s)\n",
			when, size, time.Since(start).Round(100*time.Millisecond))
	}
}

// checkWithPlugin runs `kubectl semaphore check` in every cluster until it passes (the
// handshakes of a replaced wireguard pod may take a keepalive or two), for up to a minute.
func (s *soakRun) checkWithPlugin(ctx context.Context) {
	kubeconfig, err := s.l.underlayKubeconfig()
	if err != nil {
		s.problem("kubeconfig for the underlay: %v", err)
		return
	}
	for _, cluster := range clusterNames() {
		var last string
		deadline := time.Now().Add(time.Minute)
		for {
			results, code, err := s.l.runCheck(ctx, kubeconfig, cluster)
			if err == nil && code == 0 && len(failedChecks(results)) == 0 {
				fmt.Fprintf(s.l.out, "  kubectl semaphore --context %s check: %d checks passed\n", cluster, len(results))
				break
			}
			last = fmt.Sprintf("exit status %d, %v, failures: %s", code, err, strings.Join(failedChecks(results), "; "))
			if time.Now().After(deadline) || ctx.Err() != nil {
				s.problem("kubectl semaphore --context %s check after the soak: %s", cluster, last)
				break
			}
			time.Sleep(2 * time.Second)
		}
	}
}

// removeWorkloads deletes the churn's namespace in every cluster and waits until it is gone.
func (s *soakRun) removeWorkloads(ctx context.Context) error {
	for _, name := range clusterNames() {
		err := s.l.clusters[name].Client.CoreV1().Namespaces().Delete(ctx, soakNamespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, soakSettle, true, func(ctx context.Context) (bool, error) {
		for _, name := range clusterNames() {
			_, err := s.l.clusters[name].Client.CoreV1().Namespaces().Get(ctx, soakNamespace, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// podFootprint is what a controller pod runs and holds.
type podFootprint struct {
	ControllerState
	Goroutines float64
	RSS        float64 // bytes
	// Heap is the Go heap in use (bytes): what the program holds, of RSS.
	Heap float64
}

// footprint reads every controller's goroutines and resident memory from its /metrics, by pod
// UID.
func (l *lab) footprint(ctx context.Context) (map[string]podFootprint, error) {
	out := map[string]podFootprint{}
	for _, c := range l.snapshot().Controllers {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		samples, err := testbed.Scrape(sctx, http.DefaultClient, "http://"+c.Admin+"/metrics", "")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", c.Component, c.where(), err)
		}
		g, _ := testbed.SampleSum(samples, "go_goroutines", nil)
		rss, _ := testbed.SampleSum(samples, "process_resident_memory_bytes", nil)
		heap, _ := testbed.SampleSum(samples, "go_memstats_heap_inuse_bytes", nil)
		out[c.PodUID] = podFootprint{ControllerState: c, Goroutines: g, RSS: rss, Heap: heap}
	}
	return out, nil
}

// checkFootprint compares every controller's footprint now with the bounds, and with its own
// before the churn when it lived through it; it prints the peaks Prometheus saw over the soak.
func (s *soakRun) checkFootprint(ctx context.Context, before map[string]podFootprint, over time.Duration) {
	after, err := s.l.footprint(ctx)
	if err != nil {
		s.problem("the controllers' footprint after the soak: %v", err)
		return
	}
	busiest := map[[2]string]float64{} // component, cluster: the most goroutines before
	for _, b := range before {
		k := [2]string{b.Component, b.Cluster}
		busiest[k] = max(busiest[k], b.Goroutines)
	}
	fmt.Fprintf(s.l.out, "  footprint at the end (goroutines, resident memory, Go heap in use; before the churn for the pods that lived through it):\n")
	for _, c := range s.l.snapshot().Controllers {
		a := after[c.PodUID]
		line := fmt.Sprintf("    %-24s %-44s %4.0f goroutines  %5.1f MiB  heap %5.1f MiB", c.Component, c.where(), a.Goroutines, a.RSS/(1<<20), a.Heap/(1<<20))
		if b, ok := before[c.PodUID]; ok {
			line += fmt.Sprintf("   (before: %4.0f, %5.1f MiB, heap %5.1f MiB)", b.Goroutines, b.RSS/(1<<20), b.Heap/(1<<20))
		}
		if most := busiest[[2]string{c.Component, c.Cluster}]; a.Goroutines > most+soakGoroutineGrowth {
			s.problem("%s %s runs %.0f goroutines after the soak, its busiest pod %.0f before: more than %d more", c.Component, c.where(), a.Goroutines, most, soakGoroutineGrowth)
		}
		fmt.Fprintln(s.l.out, line)
		if a.Goroutines > soakMaxGoroutines {
			s.problem("%s %s runs %.0f goroutines after the soak (bound %d)", c.Component, c.where(), a.Goroutines, soakMaxGoroutines)
		}
		if a.RSS > soakMaxRSS {
			s.problem("%s %s holds %.1f MiB after the soak (bound %d MiB)", c.Component, c.where(), a.RSS/(1<<20), soakMaxRSS>>20)
		}
	}
	s.printPeaks(ctx, over)
}

// printPeaks prints, per component, the most goroutines and resident memory any of its pods
// had over the soak, as Prometheus scraped them.
func (s *soakRun) printPeaks(ctx context.Context, over time.Duration) {
	st := s.l.snapshot()
	window := strconv.Itoa(int(over.Seconds())) + "s"
	for _, m := range []struct{ metric, unit string }{{"go_goroutines", ""}, {"process_resident_memory_bytes", "MiB"}, {"go_memstats_heap_inuse_bytes", "MiB"}} {
		r, err := promQuery(ctx, st.Prometheus.URL, fmt.Sprintf("max by (job) (max_over_time(%s[%s]))", m.metric, window))
		if err != nil {
			s.problem("peak %s over the soak: %v", m.metric, err)
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
		fmt.Fprintf(s.l.out, "  peak %s over the soak: %s\n", m.metric, strings.Join(parts, ", "))
	}
}

// checkAlerts asks Prometheus which alerts fired during the soak (none may: every fault of
// the churn is shorter than an alert's for:), then waits for no alert to be pending or firing.
func (s *soakRun) checkAlerts(ctx context.Context, over time.Duration) {
	st := s.l.snapshot()
	window := strconv.Itoa(int(over.Seconds())) + "s"
	fired, err := promQuery(ctx, st.Prometheus.URL, fmt.Sprintf(`max by (alertname, cluster) (max_over_time(ALERTS{alertstate="firing"}[%s]))`, window))
	if err != nil {
		s.problem("alerts fired during the soak: %v", err)
	}
	for _, a := range fired {
		s.problem("alert %s fired in %s during the soak", a.Metric["alertname"], a.Metric["cluster"])
	}
	start := time.Now()
	var active []string
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, soakQuiet, true, func(ctx context.Context) (bool, error) {
		active = activeAlerts(ctx, st.Prometheus.URL)
		return len(active) == 0, nil
	})
	if len(active) > 0 {
		s.problem("alerts not quiet %s after the soak: %s", soakQuiet, strings.Join(active, "; "))
		return
	}
	fmt.Fprintf(s.l.out, "  no alert fired during the soak; none pending or firing %s after it\n", time.Since(start).Round(time.Second))
}
