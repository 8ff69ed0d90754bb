package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/mixin"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/promapi"
)

// startPrometheus runs Prometheus scraping every controller of the lab, with the repository's
// alert rules loaded.
func (l *Lab) startPrometheus(ctx context.Context) error {
	if rec := l.Record(); rec.Nodes == nil || rec.NodesSkipped() {
		l.Logf("skipping Prometheus: without nodes, no controller runs to scrape")
		return nil
	}
	if !fileExists(layout.PrometheusBinary) {
		l.Logf("skipping Prometheus: %s is missing (bash ci/promtool.sh installs it)", layout.PrometheusBinary)
		return nil
	}
	dir := l.Path("prometheus")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	ruleFiles, rules, err := copyAlertRules(filepath.Join(dir, "rules"))
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(prometheusConfig(l.Record().Controllers, ruleFiles)), 0o644); err != nil {
		return err
	}
	addr, err := testbed.FreeAddr()
	if err != nil {
		return err
	}
	log := l.Path("logs", "prometheus.log")
	c, err := l.startChild("prometheus", layout.PrometheusBinary, []string{
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
		l.Logf("stopped Prometheus")
	})
	u := "http://" + addr
	l.update(func(rec *layout.Record) {
		rec.Prometheus = &layout.Prometheus{URL: u, Config: conf, Log: log, PID: c.cmd.Process.Pid, Rules: rules, RuleFiles: ruleFiles}
	})
	if err := waitPrometheusReady(ctx, u, c); err != nil {
		return err
	}
	l.Logf("started Prometheus on %s", u)
	return nil
}

// ReloadPrometheus points Prometheus at the controllers that run now (after a pod was
// replaced): it rewrites the configuration and has Prometheus reload it.
func (l *Lab) ReloadPrometheus(ctx context.Context) error {
	rec := l.Record()
	if rec.Prometheus == nil {
		return nil
	}
	p := rec.Prometheus
	if err := os.WriteFile(p.Config, []byte(prometheusConfig(rec.Controllers, p.RuleFiles)), 0o644); err != nil {
		return err
	}
	return promapi.Reload(ctx, p.URL)
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

// waitPrometheusReady waits for the Prometheus at u, run by c, to be ready.
func waitPrometheusReady(ctx context.Context, u string, c *Child) error {
	deadline := time.Now().Add(time.Minute)
	for !promapi.Ready(ctx, u) {
		select {
		case <-c.done:
			return fmt.Errorf("prometheus exited (%w); see %s", c.Err, c.Log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready on %s after a minute; see %s", strings.TrimPrefix(u, "http://"), c.Log)
		}
	}
	return nil
}

// prometheusConfig scrapes every controller, one job per component, each target labelled
// with its cluster.
func prometheusConfig(controllers []layout.Controller, ruleFiles []string) string {
	var b strings.Builder
	b.WriteString("# Written by the lab (lab/env/prometheus.go).\n")
	b.WriteString("global:\n  scrape_interval: 2s\n  evaluation_interval: 2s\n")
	b.WriteString("rule_files:\n")
	for _, r := range ruleFiles {
		fmt.Fprintf(&b, "  - %q\n", r)
	}
	b.WriteString("scrape_configs:\n")
	for _, component := range []string{"semaphore-service-mirror", "semaphore-policy", "semaphore-wireguard"} {
		var targets []layout.Controller
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

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
