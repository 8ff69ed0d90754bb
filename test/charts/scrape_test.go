package charts_test

import (
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// podIPs are the pod IPs the PodMonitors are checked with: Prometheus' pod discovery writes an
// IPv6 one without brackets.
var podIPs = []string{"198.18.0.10", "fd00:18::10"}

// relabeling is a relabel config of a monitoring.coreos.com/v1 endpoint, as far as these tests
// apply them.
type relabeling struct {
	SourceLabels []string `json:"sourceLabels"`
	Separator    *string  `json:"separator"`
	Regex        *string  `json:"regex"`
	TargetLabel  string   `json:"targetLabel"`
	Replacement  *string  `json:"replacement"`
	Action       string   `json:"action"`
}

// podMetricsEndpoint is what a PodMonitor's podMetricsEndpoints item says of where it scrapes.
type podMetricsEndpoint struct {
	Port        *string             `json:"port"`
	PortNumber  *int32              `json:"portNumber"`
	TargetPort  *intstr.IntOrString `json:"targetPort"`
	Relabelings []relabeling        `json:"relabelings"`
}

// podMetricsEndpoints reads the podMetricsEndpoints of PodMonitor o.
func podMetricsEndpoints(t testing.TB, o *unstructured.Unstructured) []podMetricsEndpoint {
	t.Helper()
	items, _, err := unstructured.NestedSlice(o.Object, "spec", "podMetricsEndpoints")
	if err != nil {
		t.Fatalf("PodMonitor %s: %v", o.GetName(), err)
	}
	data, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	var out []podMetricsEndpoint
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("PodMonitor %s: podMetricsEndpoints: %v", o.GetName(), err)
	}
	return out
}

// discoveredTargets are the targets Prometheus' Kubernetes pod discovery makes of a pod of spec at
// podIP, with the labels the relabelings here read: for each container (init containers too),
// one per declared port, at podIP and the port, or one without a port, at podIP alone, when it
// declares none.
func discoveredTargets(spec corev1.PodSpec, podIP string) []map[string]string {
	var out []map[string]string
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		base := map[string]string{
			"__address__": podIP, "__meta_kubernetes_pod_ip": podIP, "__meta_kubernetes_pod_container_name": c.Name,
		}
		if len(c.Ports) == 0 {
			out = append(out, base)
		}
		for _, p := range c.Ports {
			l := maps.Clone(base)
			l["__address__"] = net.JoinHostPort(podIP, strconv.Itoa(int(p.ContainerPort)))
			l["__meta_kubernetes_pod_container_port_name"] = p.Name
			l["__meta_kubernetes_pod_container_port_number"] = strconv.Itoa(int(p.ContainerPort))
			out = append(out, l)
		}
	}
	return out
}

// relabel applies rules to labels as Prometheus does (keep, drop and replace; regular expressions
// match the whole value), and reports whether the target is kept.
func relabel(t testing.TB, rules []relabeling, labels map[string]string) (map[string]string, bool) {
	t.Helper()
	labels = maps.Clone(labels)
	for _, r := range rules {
		sep := ";"
		if r.Separator != nil {
			sep = *r.Separator
		}
		expr := "(.*)"
		if r.Regex != nil {
			expr = *r.Regex
		}
		re, err := regexp.Compile("^(?s:" + expr + ")$")
		if err != nil {
			t.Fatalf("relabeling %+v: %v", r, err)
		}
		var values []string
		for _, l := range r.SourceLabels {
			values = append(values, labels[l])
		}
		value := strings.Join(values, sep)
		switch strings.ToLower(r.Action) {
		case "keep":
			if !re.MatchString(value) {
				return nil, false
			}
		case "drop":
			if re.MatchString(value) {
				return nil, false
			}
		case "", "replace":
			m := re.FindStringSubmatchIndex(value)
			if m == nil {
				continue
			}
			replacement := "$1"
			if r.Replacement != nil {
				replacement = *r.Replacement
			}
			if res := string(re.ExpandString(nil, replacement, value, m)); res != "" {
				labels[r.TargetLabel] = res
			} else {
				delete(labels, r.TargetLabel)
			}
		default:
			t.Fatalf("relabeling %+v: action %q is not one these tests apply", r, r.Action)
		}
	}
	return labels, true
}

// scraped are the targets Prometheus scrapes for a pod of spec at podIP through ep: the Prometheus
// Operator keeps, of the discovered targets, those of the port ep names (when it names one), and
// then applies ep's relabelings.
func scraped(t testing.TB, ep podMetricsEndpoint, spec corev1.PodSpec, podIP string) []map[string]string {
	t.Helper()
	var rules []relabeling
	if ep.Port != nil {
		port := regexp.QuoteMeta(*ep.Port)
		rules = append(rules, relabeling{SourceLabels: []string{"__meta_kubernetes_pod_container_port_name"}, Regex: &port, Action: "keep"})
	}
	rules = append(rules, ep.Relabelings...)
	var out []map[string]string
	for _, target := range discoveredTargets(spec, podIP) {
		if labels, kept := relabel(t, rules, target); kept {
			out = append(out, labels)
		}
	}
	return out
}

// checkPodMonitorScrapesAdminPort checks that PodMonitor o scrapes each pod of w at its pod IP
// (IPv4 or IPv6) and admin port, once: by the container port named admin where the container
// declares it, else (wireguard) by relabeling, as no port can be named.
func checkPodMonitorScrapesAdminPort(t *testing.T, o *unstructured.Unstructured, w workload) {
	t.Helper()
	eps := podMetricsEndpoints(t, o)
	if len(eps) != 1 {
		t.Fatalf("PodMonitor %s has %d podMetricsEndpoints, want 1", o.GetName(), len(eps))
	}
	ep := eps[0]
	declares := slices.ContainsFunc(mainContainer(t, w).Ports, func(p corev1.ContainerPort) bool { return p.Name == "admin" })
	if named := ep.Port != nil && *ep.Port == "admin"; named != declares || ep.PortNumber != nil || ep.TargetPort != nil {
		t.Errorf("PodMonitor %s: endpoint port %v (portNumber %v, targetPort %v), want the port named admin exactly when the container declares it (%v)", o.GetName(), ep.Port, ep.PortNumber, ep.TargetPort, declares)
	}
	admin := strconv.Itoa(adminPortOf(t, w))
	for _, ip := range podIPs {
		var got []string
		for _, l := range scraped(t, ep, w.Pod.Spec, ip) {
			got = append(got, l["__address__"])
		}
		if want := []string{net.JoinHostPort(ip, admin)}; !slices.Equal(got, want) {
			t.Errorf("PodMonitor %s scrapes a pod of %s at %s at %q, want %q", o.GetName(), w.Name, ip, got, want)
		}
	}
}

// The wireguard PodMonitor scrapes each pod at its pod IP and the admin port although the
// container declares no port to name: its relabelings keep the container's port-less target and
// set the address, an IPv6 pod IP in brackets; a sidecar's target is dropped rather than scraped
// twice. The values' own relabelings come after, and see the address set. The other components'
// PodMonitors name the container port admin.
func TestWireGuardPodMonitorScrapesPodIPAtAdminPort(t *testing.T) {
	const own = "podMonitor: {enabled: true, relabelings: [{sourceLabels: [__address__], targetLabel: scraped_address}]}"
	for _, tt := range []struct {
		name      string
		values    []string
		wantAdmin string
	}{
		{name: "default admin port", values: []string{own}, wantAdmin: "8080"},
		{name: "another admin port", values: []string{own, "adminPort: 9443"}, wantAdmin: "9443"},
	} {
		eachWireGuardChart(t, tt.name, tt.values, func(t *testing.T, dir string, _ bool, vals map[string]any) {
			m := mustRender(t, dir, vals)
			w, err := m.Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			monitors := ofComponent(m, "wireguard", "PodMonitor")
			if len(monitors) != 1 {
				t.Fatalf("%d PodMonitors of wireguard, want 1", len(monitors))
			}
			checkPodMonitorScrapesAdminPort(t, monitors[0], w)
			ep := podMetricsEndpoints(t, monitors[0])[0]
			if ep.Port != nil {
				t.Errorf("endpoint port %q: the container declares no port of that name, so Prometheus would scrape nothing", *ep.Port)
			}
			spec := *w.Pod.Spec.DeepCopy()
			spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar"})
			want := map[string]string{"198.18.0.10": "198.18.0.10:" + tt.wantAdmin, "fd00:18::10": "[fd00:18::10]:" + tt.wantAdmin}
			for ip, addr := range want {
				targets := scraped(t, ep, spec, ip)
				if len(targets) != 1 || targets[0]["__address__"] != addr || targets[0]["__meta_kubernetes_pod_container_name"] != "wireguard" {
					t.Errorf("a pod at %s with a sidecar is scraped as %v, want the wireguard container's target alone at %s", ip, targets, addr)
					continue
				}
				if got := targets[0]["scraped_address"]; got != addr {
					t.Errorf("the values' relabelings see __address__ %q, want %q (they must come after the chart's)", got, addr)
				}
			}
		})
	}
	t.Run("other components", func(t *testing.T) {
		m := mustRender(t, umbrellaChart, valuesOf(t, nil, validValues["semaphore"].values, "global: {monitoring: {enabled: true, kind: PodMonitor}}"))
		for _, comp := range components {
			if comp == "wireguard" {
				continue
			}
			w, err := m.Workload(comp)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range ofComponent(m, comp, "PodMonitor") {
				checkPodMonitorScrapesAdminPort(t, o, w)
				if ep := podMetricsEndpoints(t, o)[0]; ep.Port == nil || *ep.Port != "admin" || len(ep.Relabelings) > 0 {
					t.Errorf("PodMonitor %s: endpoint port %v with relabelings %+v, want port admin and none", o.GetName(), ep.Port, ep.Relabelings)
				}
			}
		}
	})
}

// The probes and the metrics Service's targetPort name the admin port by its number, for every
// component, so that they work for a container that declares no ports (wireguard's): the
// kubelet and the EndpointSlice controller resolve a name only against the container's ports.
func TestProbesAndMetricsServiceUseAdminPortNumber(t *testing.T) {
	on := "{serviceMonitor: {enabled: true}}"
	for _, tt := range []struct {
		name, values string
		// want is each component's admin port.
		want map[string]int
	}{
		{name: "defaults", want: map[string]int{"service-mirror": 8080, "policy": 8080, "wireguard": 8080}},
		{name: "wireguard on another port", values: "wireguard: {adminPort: 9443}", want: map[string]int{"service-mirror": 8080, "policy": 8080, "wireguard": 9443}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, nil, validValues["semaphore"].values,
				"serviceMirror: "+on+"\npolicy: "+on+"\nwireguard: "+on+"\n", tt.values)
			m := mustRender(t, umbrellaChart, vals)
			for comp, port := range tt.want {
				w, err := m.Workload(comp)
				if err != nil {
					t.Fatal(err)
				}
				c := mainContainer(t, w)
				for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
					if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromInt32(int32(port)) {
						t.Errorf("%s: %s probe %+v, want an HTTP probe on port %d by number", comp, name, p, port)
					}
				}
				services := ofComponent(m, comp, "Service")
				if len(services) != 1 {
					t.Fatalf("%s: %d Services, want its metrics Service", comp, len(services))
				}
				svc := typed[corev1.Service](t, services[0])
				want := []corev1.ServicePort{{Name: "admin", Port: int32(port), TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP}}
				if !slices.Equal(svc.Spec.Ports, want) {
					t.Errorf("%s: Service %s ports %+v, want %+v", comp, svc.Name, svc.Spec.Ports, want)
				}
			}
		})
	}
}

// scrapeJob is a Prometheus scrape_config, as far as these tests read one.
type scrapeJob struct {
	JobName        string `json:"job_name"`
	RelabelConfigs []struct {
		SourceLabels []string `json:"source_labels"`
		Separator    *string  `json:"separator"`
		Regex        *string  `json:"regex"`
		TargetLabel  string   `json:"target_label"`
		Replacement  *string  `json:"replacement"`
		Action       string   `json:"action"`
	} `json:"relabel_configs"`
}

// monitoringDocJob is the scrape job named name in docs/monitoring.md's YAML blocks.
func monitoringDocJob(t *testing.T, name string) scrapeJob {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		var cfg struct {
			ScrapeConfigs []scrapeJob `json:"scrape_configs"`
		}
		if yaml.Unmarshal([]byte(block[1]), &cfg) != nil {
			continue
		}
		for _, job := range cfg.ScrapeConfigs {
			if job.JobName == name {
				return job
			}
		}
	}
	t.Fatalf("docs/monitoring.md has no scrape job %q", name)
	return scrapeJob{}
}

// The scrape job docs/monitoring.md gives a Prometheus without the Operator finds every
// component's pods once, at the pod IP (IPv4 or IPv6) and the admin port, semaphore-wireguard's
// too, whose container declares no port; and names the series' job after the component.
func TestMonitoringDocScrapeJobFindsEveryComponent(t *testing.T) {
	job := monitoringDocJob(t, "semaphore")
	var rules []relabeling
	for _, r := range job.RelabelConfigs {
		rules = append(rules, relabeling{SourceLabels: r.SourceLabels, Separator: r.Separator, Regex: r.Regex, TargetLabel: r.TargetLabel, Replacement: r.Replacement, Action: r.Action})
	}
	m := mustRender(t, umbrellaChart, valuesOf(t, nil, validValues["semaphore"].values))
	for _, comp := range components {
		w, err := m.Workload(comp)
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range podIPs {
			var got []string
			for _, target := range discoveredTargets(w.Pod.Spec, ip) {
				for k, v := range w.Pod.Labels {
					target["__meta_kubernetes_pod_label_"+strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(k)] = v
				}
				if l, kept := relabel(t, rules, target); kept {
					got = append(got, l["__address__"]+" job="+l["job"])
				}
			}
			want := []string{net.JoinHostPort(ip, strconv.Itoa(adminPortOf(t, w))) + " job=semaphore-" + comp}
			if !slices.Equal(got, want) {
				t.Errorf("the documented job scrapes a pod of %s at %s as %q, want %q", comp, ip, got, want)
			}
		}
	}
}
