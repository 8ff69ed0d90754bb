package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/mixin"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// prometheusBinary is where the Debian package (installed by ci/promtool.sh) puts Prometheus.
const prometheusBinary = "/usr/bin/prometheus"

// PrometheusState is the running Prometheus.
type PrometheusState struct {
	URL    string `json:"url"`
	Config string `json:"config"`
	Log    string `json:"log"`
	PID    int    `json:"pid"`
	// Rules is how many rules the files of alerts/ hold: all must be loaded.
	Rules int `json:"rules"`
	// RuleFiles are the copies of alerts/ the configuration names.
	RuleFiles []string `json:"ruleFiles"`
}

// PromStatus is what the lab's Prometheus reports: its targets and its rule groups.
type PromStatus struct {
	Targets []PromTarget
	Err     error // Prometheus could not be asked
	Groups  []string
	Rules   int
}

// PromTarget is one scraped target and its `up`.
type PromTarget struct {
	Job, Cluster, Instance string
	Up                     bool
}

// startPrometheus runs Prometheus scraping every controller of the lab, with the repository's
// alert rules loaded.
func (l *lab) startPrometheus(ctx context.Context) error {
	if st := l.snapshot(); st.Nodes == nil || st.Nodes.Skipped != "" {
		l.logf("skipping Prometheus: without nodes, no controller runs to scrape")
		return nil
	}
	if !fileExists(prometheusBinary) {
		l.logf("skipping Prometheus: %s is missing (bash ci/promtool.sh installs it)", prometheusBinary)
		return nil
	}
	dir := l.path("prometheus")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	ruleFiles, rules, err := copyAlertRules(filepath.Join(dir, "rules"))
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(prometheusConfig(l.snapshot().Controllers, ruleFiles)), 0o644); err != nil {
		return err
	}
	addr, err := testbed.FreeAddr()
	if err != nil {
		return err
	}
	log := l.path("logs", "prometheus.log")
	c, err := l.startChild("prometheus", prometheusBinary, []string{
		"--config.file", conf,
		"--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr,
		"--web.enable-lifecycle",
	}, nil, log, false)
	if err != nil {
		return err
	}
	l.onTeardown(func() {
		c.stop(syscall.SIGTERM, 10*time.Second)
		l.logf("stopped Prometheus")
	})
	u := "http://" + addr
	l.mu.Lock()
	l.state.Prometheus = &PrometheusState{URL: u, Config: conf, Log: log, PID: c.cmd.Process.Pid, Rules: rules, RuleFiles: ruleFiles}
	l.mu.Unlock()
	if err := waitPrometheusReady(ctx, u, c, log); err != nil {
		return err
	}
	l.logf("started Prometheus on %s", u)
	return nil
}

// reloadPrometheus points Prometheus at the controllers that run now (after a pod was
// replaced): it rewrites the configuration and has Prometheus reload it.
func (l *lab) reloadPrometheus(ctx context.Context) error {
	st := l.snapshot()
	if st.Prometheus == nil {
		return nil
	}
	p := st.Prometheus
	if err := os.WriteFile(p.Config, []byte(prometheusConfig(st.Controllers, p.RuleFiles)), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("reloading Prometheus: %s: %s", resp.Status, body)
	}
	return nil
}

// copyAlertRules copies the rule files of alerts/ into dir, and returns the copies and how
// many rules they hold.
func copyAlertRules(dir string) (files []string, rules int, err error) {
	alerts := filepath.Join(testbed.RepoRoot(), "alerts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	sources, err := mixin.AlertFiles(alerts)
	if err != nil {
		return nil, 0, err
	}
	for _, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, 0, err
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, 0, err
		}
		files = append(files, dst)
	}
	queries, err := mixin.AlertQueries(alerts)
	return files, len(queries), err
}

// waitPrometheusReady waits for the Prometheus at u, run by c with its output in log, to answer
// /-/ready, which it does once it has loaded its TSDB and configuration.
func waitPrometheusReady(ctx context.Context, u string, c *child, log string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("prometheus exited (%w); see %s", c.err, log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready on %s after a minute; see %s", strings.TrimPrefix(u, "http://"), log)
		}
	}
}

// prometheusConfig scrapes every controller, one job per component, each target labelled
// with its cluster.
func prometheusConfig(controllers []ControllerState, ruleFiles []string) string {
	var b strings.Builder
	b.WriteString("# Written by the lab (lab/prometheus.go).\n")
	b.WriteString("global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\n")
	b.WriteString("rule_files:\n")
	for _, r := range ruleFiles {
		fmt.Fprintf(&b, "  - %q\n", r)
	}
	b.WriteString("scrape_configs:\n")
	for _, component := range []string{"semaphore-service-mirror", "semaphore-policy", "semaphore-wireguard"} {
		var targets []ControllerState
		for _, c := range controllers {
			if c.Component == component {
				targets = append(targets, c)
			}
		}
		if len(targets) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  - job_name: %q\n    static_configs:\n", component)
		for _, t := range targets {
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels:\n          cluster: %q\n", t.Admin, t.Cluster)
			// The instance is a forwarded port of this machine; the node says which it is.
			if t.Node != "" {
				fmt.Fprintf(&b, "          node: %q\n", t.Node)
			}
		}
	}
	return b.String()
}

// promResult is the data of an instant query.
type promResult struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// promAPI gets path from the Prometheus API and decodes its data into out.
func promAPI(ctx context.Context, base, path string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := base + path
	if params != nil {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s: %d: %s", path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if r.Status != "success" {
		return fmt.Errorf("%s", r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// activeAlerts are the problems of a healthy lab's Prometheus: any alert pending or firing
// (an expression of alerts/ that is true although nothing is wrong).
func activeAlerts(ctx context.Context, base string) []string {
	var r struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := promAPI(ctx, base, "/api/v1/alerts", nil, &r); err != nil {
		return []string{fmt.Sprintf("Prometheus alerts: %v", err)}
	}
	var problems []string
	for _, a := range r.Alerts {
		problems = append(problems, fmt.Sprintf("alert %s is %s in a healthy lab: %v", a.Labels["alertname"], a.State, a.Labels))
	}
	return problems
}

// promQuery runs an instant query.
func promQuery(ctx context.Context, base, query string) ([]promResult, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promResult `json:"result"`
	}
	if err := promAPI(ctx, base, "/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return nil, err
	}
	return data.Result, nil
}

// prometheusStatus is what the lab's Prometheus reports (nil when it does not run).
type prometheusStatus struct {
	prom *PromStatus
}

func (ps *prometheusStatus) collect(ctx context.Context, st *State) {
	if st.Prometheus != nil {
		ps.prom = collectPrometheus(ctx, st.Prometheus)
	}
}

// collectPrometheus asks the lab's Prometheus for every target's up and its rule groups.
func collectPrometheus(ctx context.Context, p *PrometheusState) *PromStatus {
	s := &PromStatus{}
	up, err := promQuery(ctx, p.URL, "up")
	if err != nil {
		s.Err = err
		return s
	}
	for _, r := range up {
		v, _ := r.Value[1].(string)
		s.Targets = append(s.Targets, PromTarget{Job: r.Metric["job"], Cluster: r.Metric["cluster"], Instance: r.Metric["instance"], Up: v == "1"})
	}
	sort.Slice(s.Targets, func(i, j int) bool {
		a, b := s.Targets[i], s.Targets[j]
		return a.Job+a.Cluster+a.Instance < b.Job+b.Cluster+b.Instance
	})
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []any  `json:"rules"`
		} `json:"groups"`
	}
	if err := promAPI(ctx, p.URL, "/api/v1/rules", nil, &rules); err != nil {
		s.Err = err
		return s
	}
	for _, g := range rules.Groups {
		s.Groups = append(s.Groups, g.Name)
		s.Rules += len(g.Rules)
	}
	return s
}

// problems: every controller is a target and up, and the alert rules are loaded.
func (ps *prometheusStatus) problems(st *State) []string {
	s := ps.prom
	if st.Prometheus == nil || s == nil {
		return nil
	}
	if s.Err != nil {
		return []string{fmt.Sprintf("Prometheus: %v", s.Err)}
	}
	var problems []string
	for _, c := range st.Controllers {
		i := slices.IndexFunc(s.Targets, func(t PromTarget) bool { return t.Instance == c.Admin })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("Prometheus has no up for %s in %s (%s) yet", c.Component, c.Cluster, c.Admin))
		case !s.Targets[i].Up:
			problems = append(problems, fmt.Sprintf("Prometheus: %s in %s (%s) is down", c.Component, c.Cluster, c.Admin))
		}
	}
	if s.Rules != st.Prometheus.Rules {
		problems = append(problems, fmt.Sprintf("Prometheus has loaded %d alert rules, alerts/ holds %d", s.Rules, st.Prometheus.Rules))
	}
	return problems
}

// print prints where Prometheus runs and how many of its targets are up, or why it does not
// run.
func (ps *prometheusStatus) print(w io.Writer, st *State) {
	s := ps.prom
	switch {
	case st.Prometheus == nil && st.Nodes != nil && st.Nodes.Skipped != "":
		section(w, "Prometheus: not running (no nodes, so no controller to scrape)")
		return
	case st.Prometheus == nil:
		section(w, "Prometheus: not running ("+prometheusBinary+" is missing; bash ci/promtool.sh installs it)")
		return
	}
	p := st.Prometheus
	section(w, fmt.Sprintf("Prometheus %s (%s/targets, %s/alerts, %s/rules loaded)", p.URL, p.URL, p.URL, p.URL))
	if s == nil {
		return
	}
	if s.Err != nil {
		fmt.Fprintf(w, "  error: %v\n", s.Err)
		return
	}
	up := 0
	for _, t := range s.Targets {
		if t.Up {
			up++
		}
	}
	fmt.Fprintf(w, "  %d of %d targets up; %d rules in %d groups (%s)\n", up, len(s.Targets), s.Rules, len(s.Groups), strings.Join(s.Groups, ", "))
	fmt.Fprintf(w, "  config %s, log %s\n", p.Config, p.Log)
}

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
func (l *lab) checkDashboards(ctx context.Context) []string {
	st := l.snapshot()
	if st.Nodes != nil && st.Nodes.Skipped != "" {
		fmt.Fprintf(l.out, "dashboard queries not checked: there are no nodes (%s), so no controller runs\n", st.Nodes.Skipped)
		return nil
	}
	if st.Prometheus == nil {
		return []string{"Prometheus does not run: cannot check the dashboard queries"}
	}
	queries, err := dashboardQueries()
	if err != nil {
		return []string{fmt.Sprintf("dashboards: %v", err)}
	}
	// Enough scrapes for rate() over 1m to have two samples: ~20 s after the first up.
	l.logf("waiting for Prometheus to scrape for ~20s before running the %d dashboard queries…", len(queries))
	deadline := time.Now().Add(time.Minute)
	var first time.Time
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if first.IsZero() {
			if r, err := promQuery(ctx, st.Prometheus.URL, "count(up)"); err == nil && len(r) > 0 {
				first = time.Now()
			}
		} else if time.Since(first) >= 20*time.Second {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if first.IsZero() {
		return []string{"Prometheus has no data for count(up) after a minute"}
	}
	running := map[string]bool{}
	for _, c := range st.Controllers {
		running[c.Component] = true
	}
	var problems, letOff []string
	withData := 0
	for _, q := range queries {
		expr := mixin.Instantiate(q.Expr)
		r, err := promQuery(ctx, st.Prometheus.URL, expr)
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
	fmt.Fprintf(l.out, "%d of %d dashboard queries return data\n", withData, len(queries))
	problems = append(problems, activeAlerts(ctx, st.Prometheus.URL)...)
	if len(letOff) > 0 {
		why := "it does not run in this lab"
		if st.Nodes != nil && st.Nodes.Skipped != "" {
			why = "there are no nodes (" + st.Nodes.Skipped + ")"
		}
		fmt.Fprintf(l.out, "%d read only the metrics of components that do not run, as %s:\n", len(letOff), why)
		for _, e := range letOff {
			fmt.Fprintf(l.out, "  - %s\n", e)
		}
	}
	return problems
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
