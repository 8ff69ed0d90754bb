package hostile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// countsAndAlert checks that every consumer's service mirror and policy controller counted
// their refusals and the Services over the limit, and that the alert fires for each component.
func (h *hostileRun) countsAndAlert(ctx context.Context) []string {
	problems := h.waitFor(ctx, "the consumers' controllers to count every refusal", h.countProblems)
	rec := h.l.Record()
	if rec.Prometheus == nil {
		return append(problems, fmt.Sprintf("Prometheus does not run: cannot see %s fire", hostileAlert))
	}
	start := time.Now()
	want := []string{ownership.Policy, ownership.ServiceMirror, ownership.WireGuard}
	var firing []string
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, hostileSettle, true, func(ctx context.Context) (bool, error) {
		firing = firingJobs(ctx, rec.Prometheus.URL, hostileAlert, h.remote)
		return !slices.ContainsFunc(want, func(j string) bool { return !slices.Contains(firing, j) }), nil
	})
	if slices.ContainsFunc(want, func(j string) bool { return !slices.Contains(firing, j) }) {
		return append(problems, fmt.Sprintf("alert %s fires for remote %s from %v within %s, want %v", hostileAlert, h.remote, firing, hostileSettle, want))
	}
	fmt.Fprintf(h.l.Out(), "  alert %s firing for remote %s from %s (%s after the counts were there)\n", hostileAlert, h.remote, strings.Join(firing, ", "), time.Since(start).Round(time.Second))
	return problems
}

// countProblems are the counts of wantCounts the consumers' controllers do not show.
func (h *hostileRun) countProblems(ctx context.Context) []string {
	all, err := status.Refusals(ctx, h.l.Record())
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, want := range h.wantCounts() {
		var got float64
		if i := slices.IndexFunc(all, func(r status.RefusalCount) bool {
			return r.Cluster == want.Cluster && r.Component == want.Component && r.Remote == h.remote && r.Reason == want.Reason
		}); i >= 0 {
			got = all[i].Value
		}
		if (want.Value > 0 && got != want.Value) || (want.Value == 0 && got == 0) {
			problems = append(problems, fmt.Sprintf("%s %s counts %v for %s, %s; want %s", want.Cluster, want.Component, got, h.remote, want.Reason, wantText(want.Value)))
		}
	}
	return problems
}

// wantText says what a wanted count is: exactly n, or (0) any but none.
func wantText(n float64) string {
	if n == 0 {
		return "more than 0"
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// wantCounts are the counts each consumer's controllers must show: Value 0 for a counter that
// must be more than 0 (refusals are counted once each, and a flood may add some), otherwise
// exactly Value.
func (h *hostileRun) wantCounts() []status.RefusalCount {
	var out []status.RefusalCount
	for _, c := range h.consumers() {
		out = append(out,
			status.RefusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: addrguard.ReasonOutsideRanges},
			status.RefusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: addrguard.ReasonSpecial},
			status.RefusalCount{Cluster: c, Component: ownership.ServiceMirror, Reason: status.OverLimit("services"), Value: hostileOverCap},
			status.RefusalCount{Cluster: c, Component: ownership.Policy, Reason: addrguard.ReasonOutsideRanges},
			status.RefusalCount{Cluster: c, Component: ownership.Policy, Reason: netset.ReasonHostNetwork},
		)
	}
	return out
}

// firingJobs are the jobs for which alert fires for remote.
func firingJobs(ctx context.Context, base, alert, remote string) []string {
	alerts, err := promapi.Alerts(ctx, base)
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" && a.Labels["remote"] == remote && !slices.Contains(out, a.Labels["job"]) {
			out = append(out, a.Labels["job"])
		}
	}
	slices.Sort(out)
	return out
}

// pluginCheck runs `kubectl semaphore check` in the consumer while the scenario's objects
// exist: it must run, and fail on nothing but what the hostile remote did that it reports: the
// fake nodes that are no peers (semaphore_wg_skipped_peers says why); the Services beyond the
// limit that have no mirror are a warning.
func (h *hostileRun) pluginCheck(ctx context.Context) []string {
	results, code, err := h.l.PluginCheck(ctx, h.consumer, true)
	if err != nil {
		return []string{fmt.Sprintf("kubectl semaphore --context %s check with the hostile remote: %v", h.consumer, err)}
	}
	var problems, reported []string
	setsOK := false
	for _, r := range results {
		switch {
		case r.Remote == h.remote && r.Check == "network-sets":
			setsOK = r.OK
		case r.OK && r.Warning && r.Remote == h.remote:
			reported = append(reported, fmt.Sprintf("%s (warning): %s", r.Check, r.Message))
		case r.OK:
		case r.Remote == h.remote && (r.Check == "peers" || r.Check == "mirrors"):
			reported = append(reported, fmt.Sprintf("%s: %s", r.Check, r.Message))
			continue
		default:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check with the hostile remote: %s %s<-%s %s: %s", h.consumer, r.Check, r.Cluster, r.Remote, r.Component, r.Message))
		}
	}
	if !setsOK {
		problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: the network sets of %s do not pass with the hostile pods (their refused addresses must be no difference)", h.consumer, h.remote))
	}
	fmt.Fprintf(h.l.Out(), "  kubectl semaphore --context %s check: exit status %d, %d results; about %s it reports:\n", h.consumer, code, len(results), h.remote)
	for _, r := range reported {
		fmt.Fprintf(h.l.Out(), "    %s\n", r)
	}
	return problems
}

// memory checks that no controller's resident memory reached its container's limit during the
// scenario (the peaks Prometheus scraped over the last over), and prints each component's.
func (h *hostileRun) memory(ctx context.Context, over time.Duration) []string {
	rec := h.l.Record()
	if rec.Prometheus == nil {
		return nil
	}
	r, err := promapi.Query(ctx, rec.Prometheus.URL, fmt.Sprintf("max_over_time(process_resident_memory_bytes[%ds])", int(over.Seconds())+1))
	if err != nil {
		return []string{fmt.Sprintf("peak memory during the scenario: %v", err)}
	}
	var problems []string
	peak := map[string]float64{} // component -> MiB
	limit := map[string]int64{}
	for _, res := range r {
		v, _ := strconv.ParseFloat(fmt.Sprint(res.Value[1]), 64)
		i := slices.IndexFunc(rec.Controllers, func(c layout.Controller) bool { return c.Admin == res.Metric["instance"] })
		if i < 0 {
			continue
		}
		c := rec.Controllers[i]
		peak[c.Component] = max(peak[c.Component], v)
		limit[c.Component] = c.MemoryLimit
		if c.MemoryLimit > 0 && v >= float64(c.MemoryLimit) {
			problems = append(problems, fmt.Sprintf("%s %s reached %.1f MiB during the scenario, its limit is %d MiB", c.Component, c.Where(), v/(1<<20), c.MemoryLimit>>20))
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(peak)) {
		parts = append(parts, fmt.Sprintf("%s %.1f MiB (limit %d MiB)", c, peak[c]/(1<<20), limit[c]>>20))
	}
	fmt.Fprintf(h.l.Out(), "  peak resident memory during the scenario: %s\n", strings.Join(parts, ", "))
	return problems
}
