package status

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
)

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

// prometheusStatus is what the lab's Prometheus reports (nil when it does not run).
type prometheusStatus struct {
	prom *PromStatus
}

func (ps *prometheusStatus) collect(ctx context.Context, rec *layout.Record) {
	if rec.Prometheus != nil {
		ps.prom = collectPrometheus(ctx, rec.Prometheus)
	}
}

// collectPrometheus asks the lab's Prometheus for every target's up and its rule groups.
func collectPrometheus(ctx context.Context, p *layout.Prometheus) *PromStatus {
	s := &PromStatus{}
	up, err := promapi.Query(ctx, p.URL, "up")
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
	groups, err := promapi.Rules(ctx, p.URL)
	if err != nil {
		s.Err = err
		return s
	}
	for _, g := range groups {
		s.Groups = append(s.Groups, g.Name)
		s.Rules += len(g.Rules)
	}
	return s
}

// problems: every controller is a target and up, and the alert rules are loaded.
func (ps *prometheusStatus) problems(rec *layout.Record) []string {
	s := ps.prom
	if rec.Prometheus == nil || s == nil {
		return nil
	}
	if s.Err != nil {
		return []string{fmt.Sprintf("Prometheus: %v", s.Err)}
	}
	var problems []string
	for _, c := range rec.Controllers {
		i := slices.IndexFunc(s.Targets, func(t PromTarget) bool { return t.Instance == c.Admin })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("Prometheus has no up for %s in %s (%s) yet", c.Component, c.Cluster, c.Admin))
		case !s.Targets[i].Up:
			problems = append(problems, fmt.Sprintf("Prometheus: %s in %s (%s) is down", c.Component, c.Cluster, c.Admin))
		}
	}
	if s.Rules != rec.Prometheus.Rules {
		problems = append(problems, fmt.Sprintf("Prometheus has loaded %d alert rules, alerts/ holds %d", s.Rules, rec.Prometheus.Rules))
	}
	return problems
}

// print prints where Prometheus runs and how many of its targets are up, or why it does not
// run.
func (ps *prometheusStatus) print(w io.Writer, rec *layout.Record) {
	s := ps.prom
	switch {
	case rec.Prometheus == nil && rec.Nodes != nil && rec.Nodes.Skipped != "":
		section(w, "Prometheus: not running (no nodes, so no controller to scrape)")
		return
	case rec.Prometheus == nil:
		section(w, "Prometheus: not running ("+layout.PrometheusBinary+" is missing; bash ci/promtool.sh installs it)")
		return
	}
	p := rec.Prometheus
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

// ActiveAlerts are the problems of a healthy lab's Prometheus at base: any alert pending or
// firing (an expression of alerts/ that is true although nothing is wrong).
func ActiveAlerts(ctx context.Context, base string) []string {
	alerts, err := promapi.Alerts(ctx, base)
	if err != nil {
		return []string{fmt.Sprintf("Prometheus alerts: %v", err)}
	}
	var problems []string
	for _, a := range alerts {
		problems = append(problems, fmt.Sprintf("alert %s is %s in a healthy lab: %v", a.Labels["alertname"], a.State, a.Labels))
	}
	return problems
}
