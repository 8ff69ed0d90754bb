package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

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
	if err := os.MkdirAll(filepath.Join(dir, "rules"), 0o755); err != nil {
		return err
	}
	rules, err := filepath.Glob(filepath.Join(testbed.RepoRoot(), "alerts", "*.yaml"))
	if err != nil {
		return err
	}
	var ruleFiles []string
	count := 0
	for _, r := range rules {
		if strings.HasSuffix(r, "_test.yaml") {
			continue
		}
		data, err := os.ReadFile(r)
		if err != nil {
			return err
		}
		var file struct {
			Groups []struct {
				Rules []any `json:"rules"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(data, &file); err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		for _, g := range file.Groups {
			count += len(g.Rules)
		}
		dst := filepath.Join(dir, "rules", filepath.Base(r))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		ruleFiles = append(ruleFiles, dst)
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(prometheusConfig(l.snapshot().Controllers, ruleFiles)), 0o644); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
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
	l.state.Prometheus = &PrometheusState{URL: u, Config: conf, Log: log, PID: c.cmd.Process.Pid, Rules: count}
	l.mu.Unlock()
	// Prometheus answers /-/ready once it has loaded its TSDB and configuration.
	deadline := time.Now().Add(time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
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
			return fmt.Errorf("prometheus not ready on %s after a minute; see %s", addr, log)
		}
	}
	l.logf("started Prometheus on %s", u)
	return nil
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

// prometheusProblems: every controller is a target and up, and the alert rules are loaded.
func prometheusProblems(st *State, s *PromStatus) []string {
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

func printPrometheus(w io.Writer, st *State, s *PromStatus) {
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

// dashQuery is one dashboard query.
type dashQuery struct {
	where, expr string
}

// dashboardQueries extracts the queries of dashboards/*.json as mixin_test.go does.
func dashboardQueries() ([]dashQuery, error) {
	files, _ := filepath.Glob(filepath.Join(testbed.RepoRoot(), "dashboards", "*.json"))
	var out []dashQuery
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var dash any
		if err := json.Unmarshal(data, &dash); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		walkDashboard(dash, func(path string, m map[string]any) {
			if expr, ok := m["expr"].(string); ok && expr != "" {
				out = append(out, dashQuery{filepath.Base(f) + path, expr})
			}
		}, "")
	}
	return out, nil
}

func walkDashboard(v any, visit func(string, map[string]any), path string) {
	switch v := v.(type) {
	case map[string]any:
		if title, _ := v["title"].(string); title != "" {
			path += " > " + title
		}
		visit(path, v)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkDashboard(v[k], visit, path)
		}
	case []any:
		for _, c := range v {
			walkDashboard(c, visit, path)
		}
	}
}

var (
	grafanaVars = strings.NewReplacer("${__rate_interval}", "1m", "$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h")
	variableRef = regexp.MustCompile(`\$\{?[a-zA-Z_]+\}?`)
)

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
		expr := variableRef.ReplaceAllString(grafanaVars.Replace(q.expr), ".*")
		r, err := promQuery(ctx, st.Prometheus.URL, expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("dashboard query %s: %q: %v", q.where, expr, err))
			continue
		}
		if len(r) > 0 {
			withData++
			continue
		}
		components := componentsOf(q.expr)
		if slices.ContainsFunc(components, func(c string) bool { return running[c] }) || len(components) == 0 {
			problems = append(problems, fmt.Sprintf("dashboard query %s returns no data although %s runs in the lab: %s", q.where, strings.Join(components, " and "), q.expr))
			continue
		}
		letOff = append(letOff, q.where+": "+q.expr)
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
