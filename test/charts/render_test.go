package charts_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// Every scenario of the umbrella chart renders, and what it renders is what the controllers
// need: only the enabled components, each with its credentials, environment, security
// settings, identity and (when asked for) monitoring. Every scenario of the remote chart renders
// exactly the read-only RBAC its consumers need.
func TestChartScenarios(t *testing.T) {
	for _, c := range []struct {
		dir   string
		check func(*testing.T, *manifest, map[string]any)
	}{{umbrellaChart, checkUmbrella}, {remoteChart, checkRemoteChart}} {
		for _, file := range scenarios(t, c.dir) {
			t.Run(filepath.Base(c.dir)+"/"+scenarioName(file), func(t *testing.T) {
				vals := valuesOf(t, []string{file})
				c.check(t, mustRender(t, c.dir, vals), effectiveValues(t, c.dir, vals))
			})
		}
	}
}

// Subcharts that carry scenarios of their own are installable alone: render those too.
func TestSubchartScenarios(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(umbrellaChart, "charts", "*", "ci"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Skip("no subchart has scenarios of its own")
	}
	for _, ci := range dirs {
		dir := filepath.Dir(ci)
		for _, file := range scenarios(t, dir) {
			t.Run(filepath.Base(dir)+"/"+scenarioName(file), func(t *testing.T) {
				vals := valuesOf(t, []string{file})
				m := mustRender(t, dir, vals)
				eff := effectiveValues(t, dir, vals)
				checkObjects(t, m, eff)
				checkRBACSanity(t, m)
				ws := workloadsOf(t, m)
				if len(ws) != 1 || ws[0].Component != filepath.Base(dir) {
					t.Fatalf("subchart %s alone renders %d workloads, want its own only", filepath.Base(dir), len(ws))
				}
				checkWorkload(t, m, ws[0], eff, eff)
			})
		}
	}
}

// checkObjects checks what every object of a release must be: a known kind has only fields of
// that kind, it carries the chart's standard labels and the values' common labels, and a
// namespaced object of the release lives in the release namespace (or one the chart names).
func checkObjects(t *testing.T, m *manifest, vals map[string]any) {
	t.Helper()
	common, _ := lookup(vals, "global", "commonLabels").(map[string]any)
	if c, ok := vals["commonLabels"].(map[string]any); ok {
		common = c
	}
	for _, o := range m.Objects {
		what := fmt.Sprintf("%s %s (%s)", o.GetKind(), o.GetName(), m.Source[o])
		gvk := o.GroupVersionKind()
		if scheme.Scheme.Recognizes(gvk) {
			obj, _ := scheme.Scheme.New(gvk)
			if err := runtimeFromUnstructured(o, obj); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		} else if gvk.Group != "monitoring.coreos.com" {
			t.Errorf("%s: unexpected API %s", what, gvk.GroupVersion())
		}
		labels := o.GetLabels()
		if labels["app.kubernetes.io/managed-by"] != "Helm" || labels["app.kubernetes.io/instance"] != m.Release.Name {
			t.Errorf("%s: labels %v lack app.kubernetes.io/managed-by=Helm and instance=%s", what, labels, m.Release.Name)
		}
		if errs := validateName(o); errs != "" {
			t.Errorf("%s: invalid name: %s", what, errs)
		}
		if ns := o.GetNamespace(); ns != "" && ns != m.Release.Namespace && m.Get("Namespace", ns) == nil && ns != metav1.NamespaceDefault {
			t.Errorf("%s: in namespace %s, which is neither the release's nor one the release creates", what, ns)
		}
		for k, v := range common {
			if labels[k] != str(v) {
				t.Errorf("%s: common label %s=%v missing (labels %v)", what, k, v, labels)
			}
		}
		for k, v := range labels {
			if errs := validateLabel(k, v); errs != "" {
				t.Errorf("%s: label %s=%s: %s", what, k, v, errs)
			}
		}
	}
}

// checkUmbrella checks a render of the umbrella chart with effective values vals.
func checkUmbrella(t *testing.T, m *manifest, vals map[string]any) {
	t.Helper()
	checkObjects(t, m, vals)
	byComponent := map[string][]workload{}
	for _, w := range workloadsOf(t, m) {
		byComponent[w.Component] = append(byComponent[w.Component], w)
	}
	for _, comp := range components {
		alias := aliases[comp]
		enabled := lookup(vals, alias, "enabled") != false
		ws := byComponent[comp]
		if !enabled {
			if len(ws) > 0 {
				t.Errorf("%s is disabled (%s.enabled=false) but renders %s %s", comp, alias, ws[0].Kind, ws[0].Name)
			}
			for _, o := range m.Objects {
				if o.GetLabels()["app.kubernetes.io/component"] == comp {
					t.Errorf("%s is disabled but renders %s %s", comp, o.GetKind(), o.GetName())
				}
			}
			continue
		}
		if len(ws) != 1 {
			t.Errorf("%s is enabled and renders %d workloads, want 1 (objects: %v)", comp, len(ws), m.Kinds())
			continue
		}
		sub, _ := vals[alias].(map[string]any)
		sub = maps.Clone(sub)
		if sub == nil {
			sub = map[string]any{}
		}
		sub["global"] = vals["global"]
		checkWorkload(t, m, ws[0], vals, sub)
	}
	checkChartMonitoring(t, m, overview, umbrellaChart, vals)
	checkRBACSanity(t, m)
	if notes := m.Release.Info.Notes; !strings.Contains(notes, str(lookup(vals, "global", "clusterName"))) {
		t.Errorf("NOTES.txt does not name the cluster:\n%s", notes)
	}
}

// checkWorkload checks one component's workload and what comes with it. vals are the
// release's values (for global), sub the subchart's own.
func checkWorkload(t *testing.T, m *manifest, w workload, vals, sub map[string]any) {
	t.Helper()
	wantKind := "Deployment"
	if w.Component == "wireguard" {
		wantKind = "DaemonSet"
	}
	if w.Kind != wantKind {
		t.Errorf("%s runs as a %s, want a %s", w.Component, w.Kind, wantKind)
	}
	checkSecurity(t, w)
	checkEnv(t, w, vals, sub)
	used := checkRemotes(t, m, w, vals)
	// One kubeconfig Secret per remote with a token, for this component: no more, no fewer.
	var rendered []string
	for _, s := range m.Of("Secret") {
		if s.GetLabels()["app.kubernetes.io/component"] != w.Component {
			continue
		}
		if _, ok := secretData(t, s)["kubeconfig"]; ok {
			rendered = append(rendered, s.GetName())
		}
	}
	slices.Sort(rendered)
	slices.Sort(used)
	var tokens int
	for _, r := range remotesOf(t, vals) {
		if r.TokenSecret != nil {
			tokens++
		}
	}
	if !slices.Equal(rendered, slices.Compact(slices.Clone(used))) || len(used) != tokens {
		t.Errorf("%s: kubeconfig Secrets rendered %v, mounted %v; want one per remote with a tokenSecret (%d)", w.Component, rendered, used, tokens)
	}
	checkIdentity(t, m, w)
	if w.Component == "service-mirror" {
		checkGlobalServices(t, m, w, sub)
		checkMCS(t, m, w, sub)
	}
	if w.Kind == "Deployment" {
		want := int32(2)
		for _, k := range []string{"replicas", "replicaCount"} {
			if v, ok := sub[k]; ok {
				if _, err := fmt.Sscan(str(v), &want); err != nil {
					t.Fatalf("%s: %s %v is not a number", w.Component, k, v)
				}
			}
		}
		if ptr.Deref(w.Replicas, 1) != want {
			t.Errorf("%s: %d replicas, want %d", w.Name, ptr.Deref(w.Replicas, 1), want)
		}
		// A budget of one available pod for a single replica would block every node drain.
		pdbs := 0
		if want > 1 && lookup(sub, "podDisruptionBudget", "enabled") != false {
			pdbs = 1
		}
		checkPDB(t, m, w, pdbs)
		checkNetworkPolicy(t, m, w, lookup(sub, "networkPolicy", "enabled") == true)
	}
	if w.Kind == "DaemonSet" {
		checkDaemonSetStrategy(t, w)
	}
	checkMonitoring(t, m, w, sub)
	checkUninstallHook(t, m, w, sub)
}

// checkDaemonSetStrategy checks that the API server accepts the DaemonSet's updateStrategy (the
// chart's own checks refuse what it would not, testdata/bad-values.yaml).
func checkDaemonSetStrategy(t *testing.T, w workload) {
	t.Helper()
	s := typed[appsv1.DaemonSet](t, w.Object).Spec.UpdateStrategy
	if s.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return
	}
	ru := ptr.Deref(s.RollingUpdate, appsv1.RollingUpdateDaemonSet{})
	if err := daemonSetRollingUpdateValid(&ru); err != nil {
		t.Errorf("%s %s: updateStrategy %+v: %v", w.Kind, w.Name, s, err)
	}
}

// checkIdentity checks that the pod runs as a ServiceAccount of its own, with a token to reach
// the local API server.
func checkIdentity(t *testing.T, m *manifest, w workload) {
	t.Helper()
	name := w.Pod.Spec.ServiceAccountName
	if name == "" || name == "default" {
		t.Errorf("%s %s runs as ServiceAccount %q, want its own", w.Kind, w.Name, name)
		return
	}
	u := m.Get("ServiceAccount", name)
	if u == nil {
		t.Errorf("%s %s: ServiceAccount %s is not rendered", w.Kind, w.Name, name)
		return
	}
	sa := typed[corev1.ServiceAccount](t, u)
	automount := ptr.Deref(sa.AutomountServiceAccountToken, true)
	if w.Pod.Spec.AutomountServiceAccountToken != nil {
		automount = *w.Pod.Spec.AutomountServiceAccountToken
	}
	if !automount {
		mounted := slices.ContainsFunc(mainContainer(t, w).VolumeMounts, func(vm corev1.VolumeMount) bool {
			return vm.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
		})
		if !mounted {
			t.Errorf("%s %s: no ServiceAccount token is mounted, and the controller uses the in-cluster configuration", w.Kind, w.Name)
		}
	}
	// Which namespaces the identity may write in is tested against the API server; here:
	// every binding to it is to a role of the release.
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range m.Of(kind) {
			b := typed[rbacv1.RoleBinding](t, u)
			for _, s := range b.Subjects {
				if s.Kind == "ServiceAccount" && s.Name == name && m.Get(b.RoleRef.Kind, b.RoleRef.Name) == nil {
					t.Errorf("%s %s binds %s to %s %s, which the release does not render", kind, b.Name, name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}
	}
}

// checkPDB checks a Deployment's PodDisruptionBudgets (want of them): one replica always
// available, and an unready pod (a remote is down) still evictable.
func checkPDB(t *testing.T, m *manifest, w workload, want int) {
	t.Helper()
	var found int
	for _, u := range m.Of("PodDisruptionBudget") {
		pdb := typed[policyv1.PodDisruptionBudget](t, u)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(w.Pod.Labels)) {
			continue
		}
		found++
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.String() != "1" {
			t.Errorf("PodDisruptionBudget %s: minAvailable %v, want 1", pdb.Name, pdb.Spec.MinAvailable)
		}
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
			t.Errorf("PodDisruptionBudget %s: unhealthyPodEvictionPolicy %v, want AlwaysAllow", pdb.Name, p)
		}
	}
	if found != want {
		t.Errorf("Deployment %s with %d replicas is covered by %d PodDisruptionBudgets, want %d", w.Name, ptr.Deref(w.Replicas, 1), found, want)
	}
}

// isLocalRangesRBAC reports whether u is a component's ClusterRole or ClusterRoleBinding for
// reading the local ranges (Nodes, ServiceCIDRs, Calico IPAM blocks).
func isLocalRangesRBAC(u *unstructured.Unstructured) bool {
	return strings.HasSuffix(u.GetName(), "-local-ranges")
}

// localRangesRules are what that ClusterRole grants, and nothing else.
var localRangesRules = map[resourceRef][]string{
	{"", "nodes"}: {"list", "watch"}, {"networking.k8s.io", "servicecidrs"}: {"list", "watch"},
	{"crd.projectcalico.org", "ipamblocks"}: {"list", "watch"},
}

// checkRBACSanity checks every rule of a release: no wildcards, no Secrets, no verbs that hand
// out more rights; the local ranges' ClusterRoles grant exactly localRangesRules.
func checkRBACSanity(t *testing.T, m *manifest) {
	t.Helper()
	for _, u := range m.Of("ClusterRole") {
		if !isLocalRangesRBAC(u) {
			continue
		}
		got := map[resourceRef][]string{}
		for _, rule := range typed[rbacv1.ClusterRole](t, u).Rules {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					got[resourceRef{g, r}] = slices.Sorted(slices.Values(rule.Verbs))
				}
			}
		}
		if !maps.EqualFunc(got, localRangesRules, slices.Equal) {
			t.Errorf("ClusterRole %s grants %v, want exactly %v", u.GetName(), got, localRangesRules)
		}
	}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range m.Of(kind) {
			r := typed[rbacv1.ClusterRole](t, u)
			if r.AggregationRule != nil {
				t.Errorf("%s %s aggregates other roles", kind, r.Name)
			}
			for _, rule := range r.Rules {
				all := slices.Concat(rule.Verbs, rule.Resources, rule.APIGroups)
				if slices.Contains(all, "*") || len(rule.NonResourceURLs) > 0 {
					t.Errorf("%s %s: rule %v has a wildcard or non-resource URLs", kind, r.Name, rule)
				}
				if slices.Contains(rule.Resources, "secrets") {
					t.Errorf("%s %s: rule %v grants access to Secrets", kind, r.Name, rule)
				}
				for _, v := range []string{"escalate", "bind", "impersonate", "deletecollection"} {
					if slices.Contains(rule.Verbs, v) {
						t.Errorf("%s %s: rule %v grants %s", kind, r.Name, rule, v)
					}
				}
			}
		}
	}
}

// checkRemoteChart checks a render of semaphore-remote: per consumer a ServiceAccount, its
// token Secret and a binding to one ClusterRole that can only get, list and watch what the
// enabled components read; for the consumers with calicoIPAM, and only for them, a second
// binding to a second ClusterRole that can only get, list and watch Calico IPAM blocks; nothing
// else but the ConfigMap `kubectl semaphore link` reads (checkRemoteLink).
func checkRemoteChart(t *testing.T, m *manifest, vals map[string]any) {
	t.Helper()
	checkObjects(t, m, vals)
	checkRBACSanity(t, m)
	ipam := checkRemoteCalicoIPAM(t, m, vals)
	want := map[schema.GroupResource]bool{}
	if lookup(vals, "components", "wireguard") == true {
		want[schema.GroupResource{Resource: "nodes"}] = true
	}
	if lookup(vals, "components", "serviceMirror") == true {
		want[schema.GroupResource{Resource: "services"}] = true
		want[schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}] = true
		want[schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "serviceexports"}] = true
	}
	if lookup(vals, "components", "policy") == true {
		want[schema.GroupResource{Resource: "pods"}] = true
	}
	var roles []*unstructured.Unstructured
	for _, u := range m.Of("ClusterRole") {
		if ipam == nil || u.GetName() != ipam.Name {
			roles = append(roles, u)
		}
	}
	if len(roles) != 1 {
		t.Fatalf("%d ClusterRoles besides the Calico IPAM one, want 1 (objects: %v)", len(roles), m.Kinds())
	}
	role := typed[rbacv1.ClusterRole](t, roles[0])
	got := map[schema.GroupResource]bool{}
	clusterID := 0
	for _, rule := range role.Rules {
		if isClusterIDRule(t, role.Name, rule) {
			clusterID++
			continue
		}
		verbs := slices.Sorted(slices.Values(rule.Verbs))
		if !slices.Equal(verbs, []string{"get", "list", "watch"}) || len(rule.ResourceNames) > 0 {
			t.Errorf("ClusterRole rule %v: want exactly get, list, watch", rule)
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				got[schema.GroupResource{Group: g, Resource: r}] = true
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("ClusterRole grants %v, want %v", slices.Collect(maps.Keys(got)), slices.Collect(maps.Keys(want)))
	}
	if wantID := map[bool]int{true: 1}[lookup(vals, "components", "serviceMirror") == true]; clusterID != wantID {
		t.Errorf("ClusterRole has %v %d times, want %d (the service mirror reads the cluster's ID)", clusterIDRule, clusterID, wantID)
	}
	consumers, _ := vals["consumers"].([]any)
	kinds := map[string]int{"ClusterRole": 1}
	for _, c := range consumers {
		name := str(lookup(c.(map[string]any), "name"))
		sa := "semaphore-remote-" + name
		if m.Get("ServiceAccount", sa) == nil {
			t.Errorf("consumer %s: no ServiceAccount %s", name, sa)
		}
		var tokens int
		for _, u := range m.Of("Secret") {
			s := typed[corev1.Secret](t, u)
			if s.Type == corev1.SecretTypeServiceAccountToken && s.Annotations[corev1.ServiceAccountNameKey] == sa {
				tokens++
			}
		}
		if tokens != 1 {
			t.Errorf("consumer %s: %d token Secrets for ServiceAccount %s, want 1", name, tokens, sa)
		}
		var bound int
		for _, u := range m.Of("ClusterRoleBinding") {
			b := typed[rbacv1.ClusterRoleBinding](t, u)
			if ipam != nil && b.RoleRef.Name == ipam.Name {
				continue // checked by checkRemoteCalicoIPAM
			}
			if len(b.Subjects) == 1 && b.Subjects[0].Kind == "ServiceAccount" && b.Subjects[0].Name == sa && b.Subjects[0].Namespace == m.Release.Namespace {
				bound++
				if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != role.Name {
					t.Errorf("ClusterRoleBinding %s binds %s to %s %s", b.Name, sa, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}
		if bound != 1 {
			t.Errorf("consumer %s: %d ClusterRoleBindings for %s alone, want 1", name, bound, sa)
		}
		kinds["ServiceAccount"]++
		kinds["Secret"]++
		kinds["ClusterRoleBinding"]++
		if lookup(c.(map[string]any), "calicoIPAM") == true {
			kinds["ClusterRoleBinding"]++
		}
		if !strings.Contains(m.Release.Info.Notes, name) {
			t.Errorf("NOTES.txt does not mention consumer %s", name)
		}
	}
	if ipam != nil {
		kinds["ClusterRole"]++
	}
	checkRemoteLink(t, m, vals)
	kinds["ConfigMap"]++
	if !maps.Equal(m.Kinds(), kinds) {
		t.Errorf("objects %v, want %v", m.Kinds(), kinds)
	}
}

// checkRemoteLink checks the ConfigMap of semaphore-remote that `kubectl semaphore link` finds by
// its label: in the release namespace, holding clusterName, apiServer and the consumers' names
// one per line, in list order.
func checkRemoteLink(t *testing.T, m *manifest, vals map[string]any) {
	t.Helper()
	var links []*corev1.ConfigMap
	for _, u := range m.Of("ConfigMap") {
		if u.GetLabels()["semaphore.uw.io/remote-link"] == "true" {
			links = append(links, typed[corev1.ConfigMap](t, u))
		}
	}
	if len(links) != 1 {
		t.Fatalf("%d ConfigMaps labelled semaphore.uw.io/remote-link=true, want 1", len(links))
	}
	cm := links[0]
	var names []string
	consumers, _ := vals["consumers"].([]any)
	for _, c := range consumers {
		names = append(names, str(lookup(c.(map[string]any), "name")))
	}
	want := map[string]string{
		"clusterName": str(vals["clusterName"]),
		"apiServer":   str(vals["apiServer"]),
		"consumers":   strings.Join(names, "\n"),
	}
	if cm.Namespace != m.Release.Namespace || !maps.Equal(cm.Data, want) {
		t.Errorf("link ConfigMap %s/%s holds %q, want %q in namespace %s", cm.Namespace, cm.Name, cm.Data, want, m.Release.Namespace)
	}
}

// runtimeFromUnstructured converts u into obj, failing on fields obj does not have.
func runtimeFromUnstructured(u *unstructured.Unstructured, obj runtime.Object) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true)
}

// validateLabel returns why k=v is not a valid label, or "".
func validateLabel(k, v string) string {
	return strings.Join(append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...), "; ")
}

// validateName returns why o's name is not valid for its kind, or "": Services and Namespaces
// need DNS labels (a Service's must start with a letter), the rest DNS subdomains.
func validateName(o *unstructured.Unstructured) string {
	var errs []string
	switch o.GetKind() {
	case "Service":
		errs = validation.IsDNS1035Label(o.GetName())
	case "Namespace":
		errs = validation.IsDNS1123Label(o.GetName())
	case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		// RBAC names only need to be valid path segments.
	default:
		errs = validation.IsDNS1123Subdomain(o.GetName())
	}
	return strings.Join(errs, "; ")
}

// Values beyond the scenarios that users will set: each renders and passes the same checks.
func TestUmbrellaVariants(t *testing.T) {
	all := filepath.Join(umbrellaChart, "ci", "all-values.yaml")
	tests := []struct {
		name, release, namespace, values string
		check                            func(t *testing.T, m *manifest)
	}{
		{
			// Helm's longest release name (53): every name derived from it must stay valid.
			name: "longest release name", release: strings.Repeat("r", 44) + "-semaphor", namespace: releaseNamespace,
			values: "serviceMirror: {podMonitor: {enabled: true}}\npolicy: {podMonitor: {enabled: true}}\nwireguard: {serviceMonitor: {enabled: true}, podMonitor: {enabled: true}}",
		},
		{
			name: "one replica", release: releaseName, namespace: releaseNamespace,
			values: "serviceMirror: {replicas: 1}\npolicy: {replicas: 1, leaderElection: {enabled: false}}",
		},
		{
			name: "mirrors in the release namespace", release: releaseName, namespace: "semaphore",
			values: "serviceMirror: {mirrorNamespace: {name: semaphore}}",
			check: func(t *testing.T, m *manifest) {
				if ns := m.Of("Namespace"); len(ns) > 0 {
					t.Errorf("the release creates Namespace %s, its own", ns[0].GetName())
				}
			},
		},
		{
			name: "no remotes yet", release: releaseName, namespace: releaseNamespace,
			values: "global: {remotes: []}",
		},
		{
			name: "kernel WireGuard on another admin port", release: releaseName, namespace: releaseNamespace,
			values: "wireguard: {mode: kernel, adminPort: 9443}",
		},
		{
			// The longest remote name the chart allows, next to a short one.
			name: "longest remote name", release: releaseName, namespace: releaseNamespace,
			values: fmt.Sprintf(`
global:
  remotes:
    - {name: aws, server: "https://aws.example.net", podRanges: [10.10.0.0/16], tokenSecret: {name: semaphore-remote-aws}}
    - {name: %[1]s, server: "https://10.0.0.1:6443", podRanges: [10.30.0.0/16], tokenSecret: {name: semaphore-remote-long, key: token}}
wireguard:
  listenPorts: {aws: 51821, %[1]s: 51822}
`, strings.Repeat("l", 50)+"-merit"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, []string{all}, tt.values)
			m := mustRenderAs(t, umbrellaChart, tt.release, tt.namespace, vals)
			checkUmbrella(t, m, effectiveValues(t, umbrellaChart, vals))
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

// Each subchart installs alone (a cluster that only needs one goal), with only the globals.
func TestSubchartsAlone(t *testing.T) {
	for _, comp := range components {
		t.Run(comp, func(t *testing.T) {
			dir := filepath.Join(umbrellaChart, "charts", comp)
			vals := valuesOf(t, nil, aloneValues(comp))
			m := mustRender(t, dir, vals)
			eff := effectiveValues(t, dir, vals)
			checkObjects(t, m, eff)
			checkRBACSanity(t, m)
			ws := workloadsOf(t, m)
			if len(ws) != 1 || ws[0].Component != comp {
				t.Fatalf("subchart %s alone renders %d workloads, want its own only", comp, len(ws))
			}
			checkWorkload(t, m, ws[0], eff, eff)
		})
	}
}

// checkNetworkPolicy checks a Deployment's NetworkPolicy, one exactly when enabled: it selects
// the component's pods and admits nothing but their admin port.
func checkNetworkPolicy(t *testing.T, m *manifest, w workload, enabled bool) {
	t.Helper()
	var found int
	for _, u := range m.Of("NetworkPolicy") {
		np := typed[networkingv1.NetworkPolicy](t, u)
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(w.Pod.Labels)) {
			continue
		}
		found++
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
			t.Errorf("NetworkPolicy %s: policy types %v and %d ingress rules, want Ingress and one rule", np.Name, np.Spec.PolicyTypes, len(np.Spec.Ingress))
			continue
		}
		rule := np.Spec.Ingress[0]
		if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.String() != "admin" || len(rule.From) == 0 {
			t.Errorf("NetworkPolicy %s: ingress %v, want the admin port alone, from named peers", np.Name, rule)
		}
	}
	if want := map[bool]int{true: 1}[enabled]; found != want {
		t.Errorf("%s %s is selected by %d NetworkPolicies, want %d", w.Kind, w.Name, found, want)
	}
}
