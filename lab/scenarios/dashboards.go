package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/mixin"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// dashboardQueries are the queries of the repository's dashboards.
func dashboardQueries() ([]mixin.Query, error) {
	return mixin.DashboardQueries(filepath.Join(testbed.RepoRoot(), "dashboards"))
}

// metricPrefixes are the prefixes of each component's metrics.
var metricPrefixes = map[string]string{
	"semaphore-service-mirror": "semaphore_service_mirror_",
	"semaphore-policy":         "semaphore_policy_",
	"semaphore-wireguard":      "semaphore_wg_",
}

// metricName finds the metric names in a query.
var metricName = regexp.MustCompile(`\bsemaphore_[a-z_]+\b`)

// componentsOf are the components whose metrics query reads.
func componentsOf(query string) []string {
	var out []string
	for _, name := range metricName.FindAllString(query, -1) {
		for component, prefix := range metricPrefixes {
			if strings.HasPrefix(name, prefix) && !slices.Contains(out, component) {
				out = append(out, component)
			}
		}
	}
	return out
}

// checkDashboards runs every dashboard query through the lab's Prometheus once it has
// scraped for a while, and returns the problems: a query that errors, or returns no data
// although a component it reads runs in the lab. (Error and clash counters start at zero, so
// those panels have data too.) Only the queries of components that do not run (wireguard
// without root) are let off, and listed.
func checkDashboards(ctx context.Context, l *env.Lab) []string {
	rec := l.Record()
	if rec.NodesSkipped() {
		fmt.Fprintf(l.Out(), "dashboard queries not checked: there are no nodes (%s), so no controller runs\n", rec.Nodes.Skipped)
		return nil
	}
	if rec.Prometheus == nil {
		return []string{"Prometheus does not run: cannot check the dashboard queries"}
	}
	queries, err := dashboardQueries()
	if err != nil {
		return []string{fmt.Sprintf("dashboards: %v", err)}
	}
	// Enough scrapes for rate() over 1m to have two samples: ~20 s after the first up.
	l.Logf("waiting for Prometheus to scrape for ~20s before running the %d dashboard queries…", len(queries))
	if !scrapedFor(ctx, rec.Prometheus.URL, 20*time.Second, time.Minute) {
		return []string{"Prometheus has no data for count(up) after a minute"}
	}
	problems, letOff := runQueries(ctx, l, rec, queries)
	problems = append(problems, status.ActiveAlerts(ctx, rec.Prometheus.URL)...)
	if len(letOff) > 0 {
		why := "it does not run in this lab"
		if rec.NodesSkipped() {
			why = "there are no nodes (" + rec.Nodes.Skipped + ")"
		}
		fmt.Fprintf(l.Out(), "%d read only the metrics of components that do not run, as %s:\n", len(letOff), why)
		for _, e := range letOff {
			fmt.Fprintf(l.Out(), "  - %s\n", e)
		}
	}
	return problems
}

// scrapedFor waits until the Prometheus at base has had data for count(up) for d, for up to
// timeout, and tells whether it had any.
func scrapedFor(ctx context.Context, base string, d, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	var first time.Time
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if first.IsZero() {
			if r, err := promapi.Query(ctx, base, "count(up)"); err == nil && len(r) > 0 {
				first = time.Now()
			}
		} else if time.Since(first) >= d {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return !first.IsZero()
}

// runQueries runs queries and returns the problems, and the queries let off: those without
// data that read only components that do not run in the lab. It prints how many have data.
func runQueries(ctx context.Context, l *env.Lab, rec *layout.Record, queries []mixin.Query) (problems, letOff []string) {
	running := map[string]bool{}
	for _, c := range rec.Controllers {
		running[c.Component] = true
	}
	withData := 0
	for _, q := range queries {
		expr := mixin.Instantiate(q.Expr)
		r, err := promapi.Query(ctx, rec.Prometheus.URL, expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("dashboard query %s: %q: %v", q.Where, expr, err))
			continue
		}
		if len(r) > 0 {
			withData++
			continue
		}
		components := componentsOf(q.Expr)
		if slices.ContainsFunc(components, func(c string) bool { return running[c] }) || len(components) == 0 {
			problems = append(problems, fmt.Sprintf("dashboard query %s returns no data although %s runs in the lab: %s", q.Where, strings.Join(components, " and "), q.Expr))
			continue
		}
		letOff = append(letOff, q.Where+": "+q.Expr)
	}
	fmt.Fprintf(l.Out(), "%d of %d dashboard queries return data\n", withData, len(queries))
	return problems, letOff
}
