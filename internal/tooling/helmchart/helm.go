package helmchart

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Dirs are the charts' directories under the repository root.
var (
	UmbrellaDir = filepath.Join("charts", "semaphore")
	RemoteDir   = filepath.Join("charts", "semaphore-remote")
)

// KubeVersion is the Kubernetes version offline renders assume (`helm template --kube-version`):
// the one this module's k8s.io libraries belong to. Helm's own default, built without its
// release ldflags, is v1.20, which no chart of ours targets.
const KubeVersion = "v1.36.0"

// ExtraAPIVersions are announced to offline renders as `helm template --api-versions` would,
// as in a cluster of KubeVersion that runs the Prometheus Operator and Calico. Helm's offline
// defaults name API groups and versions but no kinds, so the kinds charts test for are here.
var ExtraAPIVersions = []string{
	"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
	"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
	"monitoring.coreos.com/v1",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PodMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
	"crd.projectcalico.org/v1",
	"crd.projectcalico.org/v1/GlobalNetworkSet",
	"projectcalico.org/v3",
	"projectcalico.org/v3/GlobalNetworkSet",
}

// Load loads a chart directory as `helm install <dir>` does, including its check that every
// dependency in Chart.yaml is present under charts/ and that the chart is installable. Load a
// chart afresh for every install: installing prunes disabled subcharts from it.
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	if req := ch.Metadata.Dependencies; req != nil {
		if err := action.CheckDependencies(ch, req); err != nil {
			return nil, fmt.Errorf("chart %s: %w", dir, err)
		}
	}
	if typ := ch.Metadata.Type; typ != "" && typ != "application" {
		return nil, fmt.Errorf("chart %s: type %q is not installable", dir, typ)
	}
	return ch, nil
}

// Render renders chart dir with vals offline, as `helm install --dry-run` (`helm template`)
// does: dependencies enabled by their conditions and renamed by their aliases, values validated
// against every values.schema.json. Its error is the one a user would see.
func Render(dir, name, namespace string, vals map[string]any) (*release.Release, error) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	ch, err := Load(dir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly = true
	install.DryRun = true
	install.ReleaseName = name
	install.Namespace = namespace
	install.KubeVersion = kv
	install.APIVersions = ExtraAPIVersions
	return install.Run(ch, vals)
}

// RenderManifest renders chart dir with vals (Render) and parses what it makes (Parse).
func RenderManifest(dir, name, namespace string, vals map[string]any) (*Manifest, error) {
	rel, err := Render(dir, name, namespace, vals)
	if err != nil {
		return nil, err
	}
	return Parse(rel)
}

// Config is the Helm SDK's configuration for namespace in the cluster of kubeconfig, as `helm
// --kubeconfig <kubeconfig> -n <namespace>` builds it: releases stored as Secrets. cacheDir
// holds the discovery cache; logf receives Helm's messages.
func Config(kubeconfig, namespace, cacheDir string, logf func(format string, v ...any)) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	flags.CacheDir = &cacheDir
	// Like helm's --burst-limit (100), rather than client-go's 5 requests per second.
	flags.WrapConfigFn = func(rc *rest.Config) *rest.Config {
		rc.QPS, rc.Burst = 100, 100
		return rc
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", logf); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Install installs chart dir as release name in namespace through cfg, as `helm install
// --create-namespace` would (without --wait), and returns what it installed.
func Install(cfg *action.Configuration, dir, name, namespace string, vals map[string]any) (*Manifest, error) {
	ch, err := Load(dir)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = name, namespace
	in.CreateNamespace = true
	in.Timeout = time.Minute
	rel, err := in.Run(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("helm install %s: %w", name, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		return nil, fmt.Errorf("release %s is %s: %s", name, rel.Info.Status, rel.Info.Description)
	}
	return Parse(rel)
}

// Upgrade upgrades release name in namespace to chart dir with vals through cfg, as `helm
// upgrade` would (without --wait), and returns what it installed.
func Upgrade(cfg *action.Configuration, dir, name, namespace string, vals map[string]any) (*Manifest, error) {
	ch, err := Load(dir)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = namespace
	up.Timeout = time.Minute
	rel, err := up.Run(name, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s: %w", name, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		return nil, fmt.Errorf("release %s is %s: %s", name, rel.Info.Status, rel.Info.Description)
	}
	return Parse(rel)
}

// Manifest is what a release renders: its objects (hooks included), in order.
type Manifest struct {
	Release *release.Release
	Objects []*unstructured.Unstructured
	// Source is the template each object comes from, for messages.
	Source map[*unstructured.Unstructured]string
}

// Parse splits a release's manifest and hooks into objects, in the order Helm installs them.
func Parse(rel *release.Release) (*Manifest, error) {
	m := &Manifest{Release: rel, Source: map[*unstructured.Unstructured]string{}}
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
			return nil, fmt.Errorf("rendered manifest does not parse: %w\n%s", err, doc)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("rendered object without kind, apiVersion or name:\n%s", doc)
		}
		m.Objects = append(m.Objects, u)
		src, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(doc), "# Source: "), "\n")
		m.Source[u] = src
	}
	return m, nil
}

// Of returns the objects of kind.
func (m *Manifest) Of(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Get returns the object of kind and name, or nil.
func (m *Manifest) Get(kind, name string) *unstructured.Unstructured {
	for _, o := range m.Of(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// Kinds counts the objects by kind, for messages.
func (m *Manifest) Kinds() map[string]int {
	out := map[string]int{}
	for _, o := range m.Objects {
		out[o.GetKind()]++
	}
	return out
}

// Typed converts u into T and refuses a field T does not have: a misspelt or misplaced field
// in a template is dropped silently by the API server, and found here.
func Typed[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return out, nil
}

// HookAnnotation marks a Helm hook: an object Helm creates when it runs the hook, not with
// the release.
const HookAnnotation = "helm.sh/hook"

// Workload is a Deployment or DaemonSet of a release, with its pod template.
type Workload struct {
	Kind, Name string
	// Component is the component the workload runs: service-mirror, policy or wireguard (from
	// its container image, semaphore-<component>).
	Component string
	Replicas  *int32
	Pod       corev1.PodTemplateSpec
	Object    *unstructured.Unstructured
}

// Workloads returns the release's Deployments and DaemonSets; any other pod-running kind is an
// error, so that nothing escapes the checks made on workloads. Helm hooks (the uninstall Jobs)
// are not the release's workloads: they run once, when Helm calls them, and their own tests
// check them.
func (m *Manifest) Workloads() ([]Workload, error) {
	var out []Workload
	for _, o := range m.Objects {
		if _, hook := o.GetAnnotations()[HookAnnotation]; hook {
			continue
		}
		var w Workload
		switch o.GetKind() {
		case "Deployment":
			d, err := Typed[appsv1.Deployment](o)
			if err != nil {
				return nil, err
			}
			w = Workload{Kind: "Deployment", Name: d.Name, Replicas: d.Spec.Replicas, Pod: d.Spec.Template, Object: o}
		case "DaemonSet":
			d, err := Typed[appsv1.DaemonSet](o)
			if err != nil {
				return nil, err
			}
			w = Workload{Kind: "DaemonSet", Name: d.Name, Pod: d.Spec.Template, Object: o}
		case "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod", "ReplicationController":
			return nil, fmt.Errorf("unexpected workload %s %s", o.GetKind(), o.GetName())
		default:
			continue
		}
		c, err := componentOf(w)
		if err != nil {
			return nil, err
		}
		w.Component = c
		out = append(out, w)
	}
	return out, nil
}

// Workload returns the workload that runs component.
func (m *Manifest) Workload(component string) (Workload, error) {
	ws, err := m.Workloads()
	if err != nil {
		return Workload{}, err
	}
	for _, w := range ws {
		if w.Component == component {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("release %s has no workload of semaphore-%s", m.Release.Name, component)
}

// componentOf names the component a workload runs from its first container's image
// (<registry>/semaphore-<component>[:tag][@digest]).
func componentOf(w Workload) (string, error) {
	if len(w.Pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("%s %s has no containers", w.Kind, w.Name)
	}
	image := w.Pod.Spec.Containers[0].Image
	image, _, _ = strings.Cut(image, "@")
	repo := image[strings.LastIndex(image, "/")+1:]
	repo, _, _ = strings.Cut(repo, ":")
	c, ok := strings.CutPrefix(repo, "semaphore-")
	if !ok || !slices.Contains(ownership.Components, c) {
		return "", fmt.Errorf("%s %s: image %q is not one of semaphore-{%s}", w.Kind, w.Name, w.Pod.Spec.Containers[0].Image, strings.Join(ownership.Components, ","))
	}
	return c, nil
}
