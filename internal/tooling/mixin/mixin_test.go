package mixin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	policy "github.com/kube-semaphore/semaphore/components/policy/app"
	serviceMirror "github.com/kube-semaphore/semaphore/components/service-mirror/app"
	wireguard "github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/tooling/mixin"
)

// exported are the metric series names the components export, from their definitions:
// histograms add _bucket, _sum and _count.
func exported() map[string]bool {
	names := map[string]bool{}
	for _, specs := range [][]metrics.Spec{serviceMirror.MetricSpecs(), policy.MetricSpecs(), wireguard.MetricSpecs()} {
		for _, s := range specs {
			names[s.Name] = true
			if s.Type == "histogram" {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					names[s.Name+suffix] = true
				}
			}
		}
	}
	return names
}

// queries are the dashboard queries and the alert expressions of the repository.
func queries(t *testing.T) []mixin.Query {
	t.Helper()
	dashboards, err := mixin.DashboardQueries(filepath.Join(testbed.RepoRoot(), "dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := mixin.AlertQueries(filepath.Join(testbed.RepoRoot(), "alerts"))
	if err != nil {
		t.Fatal(err)
	}
	return append(dashboards, alerts...)
}

var (
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// Label matchers and by/without lists hold label names, not metric names.
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// Every semaphore_* metric a dashboard panel or an alert uses is exported by a component.
func TestQueriesUseExportedMetrics(t *testing.T) {
	names := exported()
	queries := queries(t)
	if len(queries) == 0 {
		t.Skip("no dashboards or alerts yet")
	}
	for _, q := range queries {
		// A name used as a regex matcher on __name__ must match at least one exported metric.
		for _, m := range regexp.MustCompile(`__name__\s*=~\s*"([^"]+)"`).FindAllStringSubmatch(q.Expr, -1) {
			re := regexp.MustCompile("^(?:" + m[1] + ")$")
			found := false
			for n := range names {
				found = found || re.MatchString(n)
			}
			if !found {
				t.Errorf("%s: __name__=~%q matches no exported metric", q.Where, m[1])
			}
		}
		for _, id := range identifier.FindAllString(quoted.ReplaceAllString(q.Expr, `""`), -1) {
			if strings.HasPrefix(id, "semaphore_") && !names[id] {
				t.Errorf("%s: metric %s is not exported by any component (see docs/metrics.md)", q.Where, id)
			}
		}
	}
}

// Every dashboard query and alert expression parses: promtool checks them as recording rules,
// with Grafana's variables replaced by values of the right kind.
func TestQueriesParse(t *testing.T) {
	testenv.SkipIfShort(t, "promtool (ci/promtool.sh may install it)")
	queries := queries(t)
	if len(queries) == 0 {
		t.Skip("no dashboards or alerts yet")
	}
	out, err := exec.Command("bash", filepath.Join(testbed.RepoRoot(), "ci", "promtool.sh")).Output()
	if err != nil {
		t.Fatalf("ci/promtool.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	promtool := lines[len(lines)-1]
	// One promtool run for all the queries; only when that fails, one for each, to name those
	// that do not parse.
	if checkRules(t, promtool, queries...) == nil {
		return
	}
	for _, q := range queries {
		if out := checkRules(t, promtool, q); out != nil {
			t.Errorf("%s: %q does not parse:\n%s", q.Where, q.Expr, out)
		}
	}
}

// checkRules has promtool check queries as recording rules, and returns its output when it
// finds a problem, nil otherwise.
func checkRules(t *testing.T, promtool string, queries ...mixin.Query) []byte {
	t.Helper()
	var rules []any
	for i, q := range queries {
		rules = append(rules, map[string]any{"record": fmt.Sprintf("check:query_%d", i), "expr": mixin.Instantiate(q.Expr)})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "check", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		return out
	}
	return nil
}
