package charts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// The charts under test.
var (
	umbrellaChart = filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir)
	remoteChart   = filepath.Join(testbed.RepoRoot(), helmchart.RemoteDir)
)

// awsGlobals are the global values of cluster gcp with one remote, aws: all a chart needs.
const awsGlobals = `
global:
  clusterName: gcp
  remotes:
    - name: aws
      server: https://aws.example.com:6443
      podRanges: [10.10.0.0/16]
      tokenSecret:
        name: semaphore-remote-aws
        key: token
`

// loadChart is helmchart.Load for a chart that must load.
func loadChart(t testing.TB, dir string) *chart.Chart {
	t.Helper()
	ch, err := helmchart.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// valuesOf merges values files and then YAML documents given inline, in order, exactly as
// `helm install -f a.yaml -f b.yaml` merges its files.
func valuesOf(t testing.TB, files []string, overrides ...string) map[string]any {
	t.Helper()
	dir := t.TempDir()
	files = slices.Clone(files)
	for i, o := range overrides {
		f := filepath.Join(dir, fmt.Sprintf("override-%d.yaml", i))
		if err := os.WriteFile(f, []byte(o), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	opts := values.Options{ValueFiles: files}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// releaseName and releaseNamespace are what the renders install as.
const (
	releaseName      = "semaphore"
	releaseNamespace = "semaphore-system"
)

// render is helmchart.Render: it returns the error a user would see.
func render(t testing.TB, dir, name, namespace string, vals map[string]any) (*release.Release, error) {
	t.Helper()
	return helmchart.Render(dir, name, namespace, vals)
}

// mustRender is render for values that must be accepted.
func mustRender(t testing.TB, dir string, vals map[string]any) *manifest {
	t.Helper()
	return mustRenderAs(t, dir, releaseName, releaseNamespace, vals)
}

// mustRenderAs is mustRender with another release name and namespace.
func mustRenderAs(t testing.TB, dir, name, namespace string, vals map[string]any) *manifest {
	t.Helper()
	rel, err := render(t, dir, name, namespace, vals)
	if err != nil {
		t.Fatalf("rendering %s: %v", filepath.Base(dir), err)
	}
	return parseRelease(t, rel)
}

// manifest and workload are the package's, for short.
type (
	manifest = helmchart.Manifest
	workload = helmchart.Workload
)

func parseRelease(t testing.TB, rel *release.Release) *manifest {
	t.Helper()
	m, err := helmchart.Parse(rel)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// typed is helmchart.Typed for an object that must convert.
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out, err := helmchart.Typed[T](u)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// workloadsOf is m.Workloads for a release whose workloads must be well-formed.
func workloadsOf(t testing.TB, m *manifest) []workload {
	t.Helper()
	ws, err := m.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// components are the components' names, as in their images and charts.
var components = ownership.Components

// aliases are the umbrella's names of the components' subcharts.
var aliases = map[string]string{"service-mirror": "serviceMirror", "policy": "policy", "wireguard": "wireguard"}

// scenarios returns the ci/*-values.yaml files of a chart.
func scenarios(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenarios in %s/ci", dir)
	}
	return files
}

// scenarioName is "all" for ci/all-values.yaml.
func scenarioName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), "-values.yaml")
}

// lookup reads a nested value (nil when absent).
func lookup(v map[string]any, path ...string) any {
	var cur any = v
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// effectiveValues are the chart's own values with vals merged over them, as the templates see
// them (before subchart defaults).
func effectiveValues(t testing.TB, dir string, vals map[string]any) map[string]any {
	t.Helper()
	out, err := chartutil.CoalesceValues(loadChart(t, dir), vals)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
