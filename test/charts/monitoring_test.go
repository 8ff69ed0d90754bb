package charts_test

import (
	"cmp"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// overview is the component label of the umbrella's own monitoring objects (the overview
// dashboard, the alerts that span the components).
const overview = "overview"

// monitors are the values keys of the two ways a component is scraped, with their kinds.
var monitors = map[string]string{"serviceMonitor": "ServiceMonitor", "podMonitor": "PodMonitor"}

// monitoringOn says whether the monitoring object of values key (serviceMonitor, podMonitor,
// prometheusRule, dashboards) renders, for a chart's values vals (its global included): the
// key's own enabled when set; unset, global.monitoring.enabled, which for the two monitors turns
// on only the kind global.monitoring.kind names (default ServiceMonitor), and only while neither
// monitor's enabled is set.
func monitoringOn(vals map[string]any, key string) bool {
	if own, ok := lookup(vals, key, "enabled").(bool); ok {
		return own
	}
	if lookup(vals, "global", "monitoring", "enabled") != true {
		return false
	}
	kind, monitor := monitors[key]
	if !monitor {
		return true
	}
	for k := range monitors {
		if lookup(vals, k, "enabled") != nil {
			return false
		}
	}
	return kind == cmp.Or(str(lookup(vals, "global", "monitoring", "kind")), "ServiceMonitor")
}

// monitoringLabels are the labels a monitoring object of values key carries besides the standard
// ones: global.monitoring.labels, the key's own labels over them and, on dashboards, the Grafana
// sidecar's label (the chart's dashboards.label and labelValue, else global's, else
// grafana_dashboard: "1").
func monitoringLabels(vals map[string]any, key string) map[string]string {
	out := map[string]string{}
	for _, l := range []any{lookup(vals, "global", "monitoring", "labels"), lookup(vals, key, "labels")} {
		m, _ := l.(map[string]any)
		for k, v := range m {
			out[k] = str(v)
		}
	}
	if key == "dashboards" {
		label := cmp.Or(str(lookup(vals, key, "label")), str(lookup(vals, "global", "monitoring", "dashboards", "label")), "grafana_dashboard")
		out[label] = cmp.Or(str(lookup(vals, key, "labelValue")), str(lookup(vals, "global", "monitoring", "dashboards", "labelValue")), "1")
	}
	return out
}

// ofComponent returns the objects of kind labelled as component's (overview: the umbrella's own).
func ofComponent(m *manifest, component, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.Of(kind) {
		if o.GetLabels()["app.kubernetes.io/component"] == component {
			out = append(out, o)
		}
	}
	return out
}

// dashboardsOf returns component's dashboard ConfigMaps: those holding a *.json file.
func dashboardsOf(m *manifest, component string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range ofComponent(m, component, "ConfigMap") {
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		if slices.ContainsFunc(slices.Collect(maps.Keys(data)), func(k string) bool { return strings.HasSuffix(k, ".json") }) {
			out = append(out, o)
		}
	}
	return out
}

// chartFiles returns the names of the files of the chart in dir under prefix (its own, not its
// subcharts').
func chartFiles(t *testing.T, dir, prefix string) []string {
	t.Helper()
	var out []string
	for _, f := range loadChart(t, dir).Files {
		if strings.HasPrefix(f.Name, prefix) {
			out = append(out, f.Name)
		}
	}
	return out
}

// checkLabelled checks that o carries every label of want.
func checkLabelled(t *testing.T, o *unstructured.Unstructured, want map[string]string) {
	t.Helper()
	got := o.GetLabels()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %s: label %s=%q, want %q (labels %v)", o.GetKind(), o.GetName(), k, got[k], v, got)
		}
	}
}

// checkMonitoring checks the component's monitoring objects against its values: a
// ServiceMonitor (with a Service of the pods' admin port, by number), a PodMonitor (that scrapes
// the pod's admin port, checkPodMonitorScrapesAdminPort), a PrometheusRule (when the chart has
// alert files) each exactly when on (monitoringOn), all selecting the component's pods and
// carrying their labels (monitoringLabels); the dashboards as checkChartMonitoring says.
func checkMonitoring(t *testing.T, m *manifest, w workload, sub map[string]any) {
	t.Helper()
	podLabels := labels.Set(w.Pod.Labels)
	selects := func(o *unstructured.Unstructured) bool {
		ml, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		return len(ml) > 0 && labels.SelectorFromSet(ml).Matches(podLabels)
	}
	for key, kind := range monitors {
		objs := ofComponent(m, w.Component, kind)
		want := 0
		if monitoringOn(sub, key) {
			want = 1
		}
		if len(objs) != want {
			t.Errorf("%s: %s on=%v renders %d %ss", w.Component, key, want == 1, len(objs), kind)
			continue
		}
		for _, o := range objs {
			checkLabelled(t, o, monitoringLabels(sub, key))
			if kind == "PodMonitor" {
				if !selects(o) {
					t.Errorf("PodMonitor %s does not select the pods of %s", o.GetName(), w.Name)
				}
				checkPodMonitorScrapesAdminPort(t, o, w)
			}
			if kind == "ServiceMonitor" {
				// The Service's targetPort is the admin port's number: a name would need a
				// container port of that name, which wireguard's container does not declare.
				admin := adminPortOf(t, w)
				found := false
				for _, s := range m.Of("Service") {
					svc := typed[corev1.Service](t, s)
					ml, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
					if labels.SelectorFromSet(ml).Matches(labels.Set(svc.Labels)) &&
						len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) &&
						slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
							return p.Name == "admin" && p.TargetPort.Type == intstr.Int && p.TargetPort.IntValue() == admin
						}) {
						found = true
					}
				}
				if !found {
					t.Errorf("ServiceMonitor %s selects no Service of %s's pods with a port admin to the admin port, %d", o.GetName(), w.Name, admin)
				}
			}
		}
	}
	checkChartMonitoring(t, m, w.Component, filepath.Join(umbrellaChart, "charts", w.Component), sub)
}

// checkChartMonitoring checks the PrometheusRule and the dashboard ConfigMaps of component, the
// chart in dir, with that chart's values vals: none while off; while on, one PrometheusRule when
// the chart has alert files and one ConfigMap per dashboard file, holding it, in the dashboards'
// namespace, each with its labels (monitoringLabels) and the ConfigMaps with the annotations of
// the chart's dashboards over global.monitoring.dashboards'.
func checkChartMonitoring(t *testing.T, m *manifest, component, dir string, vals map[string]any) {
	t.Helper()
	rules := ofComponent(m, component, "PrometheusRule")
	on := monitoringOn(vals, "prometheusRule")
	if !on && len(rules) > 0 {
		t.Errorf("%s: prometheusRule is off but renders %d PrometheusRules", component, len(rules))
	}
	if on && len(chartFiles(t, dir, "files/alerts/")) > 0 && len(rules) != 1 {
		t.Errorf("%s: prometheusRule is on, the chart has alert files, and %d PrometheusRules render", component, len(rules))
	}
	for _, o := range rules {
		checkLabelled(t, o, monitoringLabels(vals, "prometheusRule"))
	}

	var want []string
	if monitoringOn(vals, "dashboards") {
		for _, f := range chartFiles(t, dir, "files/dashboards/") {
			want = append(want, path.Base(f))
		}
	}
	var got []string
	annotations := map[string]string{}
	for _, a := range []any{lookup(vals, "global", "monitoring", "dashboards", "annotations"), lookup(vals, "dashboards", "annotations")} {
		am, _ := a.(map[string]any)
		for k, v := range am {
			annotations[k] = str(v)
		}
	}
	for _, o := range dashboardsOf(m, component) {
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		got = append(got, slices.Collect(maps.Keys(data))...)
		checkLabelled(t, o, monitoringLabels(vals, "dashboards"))
		if ns := cmp.Or(str(lookup(vals, "dashboards", "namespace")), m.Release.Namespace); o.GetNamespace() != ns {
			t.Errorf("ConfigMap %s in namespace %s, want %s", o.GetName(), o.GetNamespace(), ns)
		}
		if got := o.GetAnnotations(); !maps.Equal(got, annotations) {
			t.Errorf("ConfigMap %s: annotations %v, want %v", o.GetName(), got, annotations)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: dashboards on=%v render ConfigMaps of %v, want %v", component, monitoringOn(vals, "dashboards"), got, want)
	}
}

// monitoringKinds are the kinds of the monitoring objects a release may render.
var monitoringKinds = []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"}

// countMonitoring counts, per component (overview: the umbrella's own), the monitoring objects of
// m by kind; dashboard ConfigMaps count as "dashboards", metrics Services as "Service".
func countMonitoring(m *manifest) map[string]map[string]int {
	out := map[string]map[string]int{}
	add := func(o *unstructured.Unstructured, kind string) {
		c := o.GetLabels()["app.kubernetes.io/component"]
		if out[c] == nil {
			out[c] = map[string]int{}
		}
		out[c][kind]++
	}
	for _, kind := range monitoringKinds {
		for _, o := range m.Of(kind) {
			add(o, kind)
		}
	}
	for _, o := range m.Of("Service") {
		if strings.HasSuffix(o.GetName(), "-metrics") {
			add(o, "Service")
		}
	}
	for _, c := range append(slices.Clone(components), overview) {
		for _, o := range dashboardsOf(m, c) {
			add(o, "dashboards")
		}
	}
	return out
}

// everything is what global.monitoring.enabled alone renders, as countMonitoring counts it: per
// component the monitor of kind (a ServiceMonitor with its metrics Service); per chart, the
// components' and the umbrella's, a PrometheusRule when it has alert files and a ConfigMap per
// dashboard file.
func everything(t *testing.T, kind string) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, c := range append(slices.Clone(components), overview) {
		dir := umbrellaChart
		out[c] = map[string]int{}
		if c != overview {
			dir = filepath.Join(umbrellaChart, "charts", c)
			out[c][kind] = 1
			if kind == "ServiceMonitor" {
				out[c]["Service"] = 1
			}
		}
		if len(chartFiles(t, dir, "files/alerts/")) > 0 {
			out[c]["PrometheusRule"] = 1
		}
		if n := len(chartFiles(t, dir, "files/dashboards/")); n > 0 {
			out[c]["dashboards"] = n
		}
	}
	return out
}

// aloneValues are minimal valid values of the subchart of component installed alone.
func aloneValues(component string) string {
	if component == "wireguard" {
		return awsGlobals + "listenPorts: {aws: 51821}\n"
	}
	return awsGlobals
}

// One switch, global.monitoring.enabled, turns on every component's monitor (of the kind
// global.monitoring.kind names, and no other), PrometheusRule and dashboards, and the umbrella's
// PrometheusRule and dashboards, every one with global.monitoring.labels, the dashboards with the
// Grafana sidecar's label too.
func TestMonitoringSwitchedOnOnce(t *testing.T) {
	for _, kind := range []string{"", "ServiceMonitor", "PodMonitor"} {
		t.Run(cmp.Or(kind, "default kind"), func(t *testing.T) {
			switchOn := "global:\n  monitoring:\n    enabled: true\n    labels: {release: kube-prometheus-stack}\n"
			if kind != "" {
				switchOn += "    kind: " + kind + "\n"
			}
			vals := valuesOf(t, nil, validValues["semaphore"].values, switchOn)
			m := mustRender(t, umbrellaChart, vals)
			checkUmbrella(t, m, effectiveValues(t, umbrellaChart, vals))
			if got, want := countMonitoring(m), everything(t, cmp.Or(kind, "ServiceMonitor")); !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("monitoring objects %v, want %v", got, want)
			}
			for _, c := range append(slices.Clone(components), overview) {
				for _, kind := range monitoringKinds {
					for _, o := range ofComponent(m, c, kind) {
						checkLabelled(t, o, map[string]string{"release": "kube-prometheus-stack"})
					}
				}
				for _, o := range dashboardsOf(m, c) {
					checkLabelled(t, o, map[string]string{"release": "kube-prometheus-stack", "grafana_dashboard": "1"})
				}
			}
		})
	}
}

// Without global.monitoring and without a chart's own enabled, no monitoring object renders: in
// the umbrella and in each subchart installed alone.
func TestMonitoringIsOffByDefault(t *testing.T) {
	charts := map[string]string{"semaphore": umbrellaChart}
	vals := map[string]string{"semaphore": validValues["semaphore"].values}
	for _, c := range components {
		charts[c] = filepath.Join(umbrellaChart, "charts", c)
		vals[c] = aloneValues(c)
	}
	for name, dir := range charts {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, dir, valuesOf(t, nil, vals[name]))
			if got := countMonitoring(m); len(got) > 0 {
				t.Errorf("monitoring objects %v, want none", got)
			}
		})
	}
}

// What a chart's own values do next to the switch: an enabled set to false turns its object off,
// set to true on; a component that picks its monitor is scraped by that one alone; its labels go
// over the global ones; the sidecar's label is set once, and a chart's own goes over it.
func TestMonitoringPrecedence(t *testing.T) {
	const switchOn = "global:\n  monitoring:\n    enabled: true\n    labels: {release: kube-prometheus-stack, team: platform}\n"
	tests := []struct {
		name, values string
		// want changes everything(t, "ServiceMonitor"): per component, the count of each kind (0
		// removes it; a nil map the component).
		want map[string]map[string]int
		// labels are labels that objects of a component and kind (or "dashboards") must carry.
		labels map[[2]string]map[string]string
	}{
		{
			name:   "a chart's false wins",
			values: switchOn + "serviceMirror: {prometheusRule: {enabled: false}}\ndashboards: {enabled: false}\n",
			want:   map[string]map[string]int{"service-mirror": {"PrometheusRule": 0}, overview: {"dashboards": 0}},
		},
		{
			name:   "a component picks its monitor",
			values: switchOn + "wireguard: {podMonitor: {enabled: true}}\n",
			want:   map[string]map[string]int{"wireguard": {"ServiceMonitor": 0, "Service": 0, "PodMonitor": 1}},
		},
		{
			name:   "a component turns its monitor off",
			values: switchOn + "policy: {serviceMonitor: {enabled: false}}\n",
			want:   map[string]map[string]int{"policy": {"ServiceMonitor": 0, "Service": 0}},
		},
		{
			name:   "a chart's true without the switch",
			values: "policy: {prometheusRule: {enabled: true, labels: {team: policy}}}\n",
			want: map[string]map[string]int{
				"service-mirror": nil, "wireguard": nil, overview: nil,
				"policy": {"ServiceMonitor": 0, "Service": 0, "dashboards": 0},
			},
			labels: map[[2]string]map[string]string{{"policy", "PrometheusRule"}: {"team": "policy"}},
		},
		{
			name:   "a chart's labels over the global ones",
			values: switchOn + "serviceMirror: {prometheusRule: {labels: {team: mirrors}}}\nprometheusRule: {labels: {severity-routing: pager}}\n",
			labels: map[[2]string]map[string]string{
				{"service-mirror", "PrometheusRule"}: {"team": "mirrors", "release": "kube-prometheus-stack"},
				{"policy", "PrometheusRule"}:         {"team": "platform", "release": "kube-prometheus-stack"},
				{overview, "PrometheusRule"}:         {"team": "platform", "severity-routing": "pager"},
			},
		},
		{
			name: "the sidecar's label set once",
			values: switchOn + "    dashboards: {label: semaphore_dashboard, labelValue: \"yes\", annotations: {grafana_folder: Semaphore}}\n" +
				"wireguard: {dashboards: {label: wg_dashboard, annotations: {grafana_folder: WireGuard}}}\n",
			labels: map[[2]string]map[string]string{
				{"service-mirror", "dashboards"}: {"semaphore_dashboard": "yes", "team": "platform"},
				{overview, "dashboards"}:         {"semaphore_dashboard": "yes"},
				{"wireguard", "dashboards"}:      {"wg_dashboard": "yes"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, nil, validValues["semaphore"].values, tt.values)
			m := mustRender(t, umbrellaChart, vals)
			checkUmbrella(t, m, effectiveValues(t, umbrellaChart, vals))
			want := everything(t, "ServiceMonitor")
			for c, kinds := range tt.want {
				if kinds == nil {
					delete(want, c)
				}
				for k, n := range kinds {
					want[c][k] = n
					if n == 0 {
						delete(want[c], k)
					}
				}
			}
			if got := countMonitoring(m); !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("monitoring objects %v, want %v", got, want)
			}
			for ck, wantLabels := range tt.labels {
				objs := ofComponent(m, ck[0], ck[1])
				if ck[1] == "dashboards" {
					objs = dashboardsOf(m, ck[0])
				}
				if len(objs) == 0 {
					t.Errorf("no %s of %s", ck[1], ck[0])
				}
				for _, o := range objs {
					checkLabelled(t, o, wantLabels)
				}
			}
		})
	}
}

// A subchart installed alone, without global.monitoring, renders the monitoring objects its own
// values turn on exactly as before the switch existed: only its own labels besides the standard
// ones (and the sidecar's grafana_dashboard: "1" on dashboards); with global.monitoring, the
// switch works there too.
func TestSubchartMonitoringAlone(t *testing.T) {
	const own = `
serviceMonitor: {enabled: true, labels: {release: prometheus}}
prometheusRule: {enabled: true}
dashboards: {enabled: true}
`
	for _, comp := range components {
		dir := filepath.Join(umbrellaChart, "charts", comp)
		t.Run(comp+"/own values", func(t *testing.T) {
			vals := valuesOf(t, nil, aloneValues(comp), own)
			m := mustRender(t, dir, vals)
			want := map[string]map[string]int{comp: {"ServiceMonitor": 1, "Service": 1, "PrometheusRule": 1, "dashboards": 1}}
			if got := countMonitoring(m); !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("monitoring objects %v, want %v", got, want)
			}
			standard := m.Get("ServiceAccount", releaseName+"-"+comp).GetLabels()
			extra := map[string]map[string]string{
				"ServiceMonitor": {"release": "prometheus"}, "PrometheusRule": {}, "ConfigMap": {"grafana_dashboard": "1"},
			}
			for kind, add := range extra {
				objs := ofComponent(m, comp, kind)
				if kind == "ConfigMap" {
					objs = dashboardsOf(m, comp)
				}
				for _, o := range objs {
					want := maps.Clone(standard)
					maps.Copy(want, add)
					if got := o.GetLabels(); !maps.Equal(got, want) {
						t.Errorf("%s %s: labels %v, want %v", kind, o.GetName(), got, want)
					}
				}
			}
		})
		t.Run(comp+"/switch", func(t *testing.T) {
			vals := valuesOf(t, nil, aloneValues(comp), "global: {monitoring: {enabled: true, kind: PodMonitor, labels: {release: kube-prometheus-stack}}}")
			m := mustRender(t, dir, vals)
			eff := effectiveValues(t, dir, vals)
			w, err := m.Workload(comp)
			if err != nil {
				t.Fatal(err)
			}
			checkMonitoring(t, m, w, eff)
			want := map[string]map[string]int{comp: {"PodMonitor": 1, "PrometheusRule": 1, "dashboards": 1}}
			if got := countMonitoring(m); !maps.EqualFunc(got, want, maps.Equal) {
				t.Errorf("monitoring objects %v, want %v", got, want)
			}
		})
	}
}
