// Package mixin reads the PromQL queries of the Grafana dashboards (dashboards/) and of the
// Prometheus alert rules (alerts/), for the code that checks them: its own tests, which check
// that the queries only use metrics the components really export and that every query parses,
// and the lab, which runs the dashboard queries against a live Prometheus.
package mixin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Query is one PromQL expression and where it comes from: its file and the titles (or the
// rule name) that lead to it.
type Query struct {
	Where, Expr string
}

// DashboardQueries are the queries of the dashboards in dir (its *.json files), in the order
// of the files and, within one, of the keys.
func DashboardQueries(dir string) ([]Query, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Query
	err = parseEach(files, func(f string, data []byte) error {
		var dash any
		if err := json.Unmarshal(data, &dash); err != nil {
			return err
		}
		walkDashboard(dash, filepath.Base(f), func(where string, m map[string]any) {
			if expr, ok := m["expr"].(string); ok && expr != "" {
				out = append(out, Query{where, expr})
			}
		})
		return nil
	})
	return out, err
}

// parseEach reads each of files and hands it to parse, stopping at the first error.
func parseEach(files []string, parse func(file string, data []byte) error) error {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := parse(f, data); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// walkDashboard calls visit with every object of a dashboard and the titles above it
// (path > title > ...).
func walkDashboard(v any, path string, visit func(string, map[string]any)) {
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
			walkDashboard(v[k], path, visit)
		}
	case []any:
		for _, c := range v {
			walkDashboard(c, path, visit)
		}
	}
}

// AlertFiles are the rule files in dir (its *.yaml files but the promtool tests, *_test.yaml).
func AlertFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.yaml") {
			out = append(out, f)
		}
	}
	return out, nil
}

// AlertQueries are the expressions of every rule (alerting or recording) of the rule files in
// dir.
func AlertQueries(dir string) ([]Query, error) {
	files, err := AlertFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Query
	err = parseEach(files, func(f string, data []byte) error {
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert  string `json:"alert"`
					Record string `json:"record"`
					Expr   string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(data, &rules); err != nil {
			return err
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				out = append(out, Query{filepath.Base(f) + " > " + r.Alert + r.Record, r.Expr})
			}
		}
		return nil
	})
	return out, err
}

var (
	grafanaIntervals = strings.NewReplacer("${__rate_interval}", "1m", "$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h")
	grafanaVariable  = regexp.MustCompile(`\$\{?[a-zA-Z_]+\}?`)
)

// Instantiate makes a dashboard query plain PromQL: Grafana's interval variables become
// durations, and every other variable (a label value picked in the dashboard) the regular
// expression .* that matches them all.
func Instantiate(expr string) string {
	return grafanaVariable.ReplaceAllString(grafanaIntervals.Replace(expr), ".*")
}
