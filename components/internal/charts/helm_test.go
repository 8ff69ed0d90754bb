package charts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/components/internal/testenv"
)

// The charts under test.
var (
	umbrellaChart = filepath.Join(testenv.RepoRoot(), "charts", "semaphore")
	remoteChart   = filepath.Join(testenv.RepoRoot(), "charts", "semaphore-remote")
)

// kubeVersion is the Kubernetes version offline renders assume (`helm template --kube-version`):
// the one this module's k8s.io libraries belong to. Helm's own default, built without its
// release ldflags, is v1.20, which no chart of ours targets.
const kubeVersion = "v1.36.0"

// extraAPIVersions are announced to offline renders as `helm template --api-versions` would,
// as in a cluster that runs the Prometheus Operator and Calico.
var extraAPIVersions = []string{
	"monitoring.coreos.com/v1",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PodMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
	"crd.projectcalico.org/v1",
	"crd.projectcalico.org/v1/GlobalNetworkSet",
	"projectcalico.org/v3",
	"projectcalico.org/v3/GlobalNetworkSet",
}

// loadChart loads a chart directory as `helm install <dir>` does, including its check that
// every dependency in Chart.yaml is present under charts/ and that the chart is installable.
// A chart is loaded afresh for every install: installing prunes disabled subcharts from it.
func loadChart(t testing.TB, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("loading chart %s: %v", dir, err)
	}
	if req := ch.Metadata.Dependencies; req != nil {
		if err := action.CheckDependencies(ch, req); err != nil {
			t.Fatalf("chart %s: %v", dir, err)
		}
	}
	if typ := ch.Metadata.Type; typ != "" && typ != "application" {
		t.Fatalf("chart %s: type %q is not installable", dir, typ)
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

// render renders chart dir with vals offline, as `helm install --dry-run` (`helm template`) does:
// dependencies enabled by their conditions and renamed by their aliases, values validated
// against every values.schema.json. It returns the error a user would see.
func render(t testing.TB, dir, name, namespace string, vals map[string]any) (*release.Release, error) {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly = true
	install.DryRun = true
	install.ReleaseName = name
	install.Namespace = namespace
	install.KubeVersion = kv
	install.APIVersions = extraAPIVersions
	return install.Run(loadChart(t, dir), vals)
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

// manifest is what a release renders: its objects (hooks included), in order.
type manifest struct {
	Release *release.Release
	Objects []*unstructured.Unstructured
	// Source is the template each object comes from, for messages.
	Source map[*unstructured.Unstructured]string
}

func parseRelease(t testing.TB, rel *release.Release) *manifest {
	t.Helper()
	m := &manifest{Release: rel, Source: map[*unstructured.Unstructured]string{}}
	docs := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var sources []string
	for _, k := range keys {
		sources = append(sources, docs[k])
	}
	for _, h := range rel.Hooks {
		sources = append(sources, h.Manifest)
	}
	for _, doc := range sources {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("rendered manifest does not parse: %v\n%s", err, doc)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			t.Fatalf("rendered object without kind, apiVersion or name:\n%s", doc)
		}
		m.Objects = append(m.Objects, u)
		src, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(doc), "# Source: "), "\n")
		m.Source[u] = src
	}
	return m
}

// Of returns the objects of kind.
func (m *manifest) Of(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Get returns the object of kind and name, or nil.
func (m *manifest) Get(kind, name string) *unstructured.Unstructured {
	for _, o := range m.Of(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// Kinds counts the objects by kind, for messages.
func (m *manifest) Kinds() map[string]int {
	out := map[string]int{}
	for _, o := range m.Objects {
		out[o.GetKind()]++
	}
	return out
}

// typed converts u into T, failing the test on a field T does not have: a misspelt or
// misplaced field in a template is dropped silently by the API server, and found here.
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// workload is a Deployment or DaemonSet of a release, with its pod template.
type workload struct {
	Kind, Name string
	// Component is the component the workload runs: service-mirror, policy or wireguard (from
	// its container image, semaphore-<component>).
	Component string
	Replicas  *int32
	Pod       corev1.PodTemplateSpec
	Object    *unstructured.Unstructured
}

// Workloads returns the release's Deployments and DaemonSets; any other pod-running kind
// fails the test, so that nothing escapes the checks.
func (m *manifest) Workloads(t testing.TB) []workload {
	t.Helper()
	var out []workload
	for _, o := range m.Objects {
		var w workload
		switch o.GetKind() {
		case "Deployment":
			d := typed[appsv1.Deployment](t, o)
			w = workload{Kind: "Deployment", Name: d.Name, Replicas: d.Spec.Replicas, Pod: d.Spec.Template, Object: o}
		case "DaemonSet":
			d := typed[appsv1.DaemonSet](t, o)
			w = workload{Kind: "DaemonSet", Name: d.Name, Pod: d.Spec.Template, Object: o}
		case "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod", "ReplicationController":
			t.Fatalf("unexpected workload %s %s", o.GetKind(), o.GetName())
		default:
			continue
		}
		w.Component = componentOf(t, w)
		out = append(out, w)
	}
	return out
}

// componentOf names the component a workload runs from its first container's image
// (<registry>/semaphore-<component>[:tag][@digest]).
func componentOf(t testing.TB, w workload) string {
	t.Helper()
	if len(w.Pod.Spec.Containers) == 0 {
		t.Fatalf("%s %s has no containers", w.Kind, w.Name)
	}
	image := w.Pod.Spec.Containers[0].Image
	image, _, _ = strings.Cut(image, "@")
	repo := image[strings.LastIndex(image, "/")+1:]
	repo, _, _ = strings.Cut(repo, ":")
	c, ok := strings.CutPrefix(repo, "semaphore-")
	if !ok || !slices.Contains(components, c) {
		t.Fatalf("%s %s: image %q is not one of semaphore-{%s}", w.Kind, w.Name, w.Pod.Spec.Containers[0].Image, strings.Join(components, ","))
	}
	return c
}

// components are the components' names, as in their images and charts.
var components = []string{"service-mirror", "policy", "wireguard"}

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
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chartutil.CoalesceValues(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
