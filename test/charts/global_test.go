package charts_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// globalRules are the only rights global services add: reads of the local cluster's Services
// and EndpointSlices in every namespace, and of its Nodes (zones) by list and watch.
var globalRules = map[resourceRef][]string{
	{"", "services"}:                       {"get", "list", "watch"},
	{"discovery.k8s.io", "endpointslices"}: {"get", "list", "watch"},
	{"", "nodes"}:                          {"list", "watch"},
}

// checkGlobalServices checks what global services take from the service mirror's chart, with
// the subchart's values sub: SEMAPHORE_GLOBAL_LABEL_SELECTOR is always set, to the selector or,
// when they are off, to "" (unset, the controller's default would turn them on); while they are
// on and RBAC is created, exactly one ClusterRole of the component grants globalRules and
// nothing else, bound to the workload's ServiceAccount alone; otherwise the component has no
// ClusterRole or ClusterRoleBinding at all.
func checkGlobalServices(t *testing.T, m *manifest, w workload, sub map[string]any) {
	t.Helper()
	on := lookup(sub, "globalServices", "enabled") != false
	want := ""
	if on {
		want = global.DefaultSelector
		if s, ok := lookup(sub, "globalServices", "labelSelector").(string); ok {
			want = s
		}
	}
	c := mainContainer(t, w)
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SEMAPHORE_GLOBAL_LABEL_SELECTOR" })
	if i < 0 || c.Env[i].ValueFrom != nil || c.Env[i].Value != want {
		t.Errorf("%s %s: SEMAPHORE_GLOBAL_LABEL_SELECTOR is %v, want the literal %q (globalServices.enabled=%v)", w.Kind, w.Name, envItem(c, i), want, on)
	}

	// The umbrella's NOTES say where global Services appear while they are on.
	if notes := m.Release.Info.Notes; strings.Contains(notes, "Where the results appear") && strings.Contains(notes, "gl-<namespace>-73736d-<name>") != on {
		t.Errorf("NOTES.txt with globalServices.enabled=%v:\n%s", on, notes)
	}

	// The read of the local ranges (checkRBACSanity) is there whether global services are on
	// or not.
	globalOnes := func(u *unstructured.Unstructured) bool {
		return u.GetLabels()["app.kubernetes.io/component"] == w.Component && !isLocalRangesRBAC(u) && !isMCSRBAC(u)
	}
	mine := func(kind string) []*rbacv1.ClusterRoleBinding {
		var out []*rbacv1.ClusterRoleBinding
		for _, u := range m.Of(kind) {
			if globalOnes(u) {
				out = append(out, typed[rbacv1.ClusterRoleBinding](t, u))
			}
		}
		return out
	}
	var roles []*rbacv1.ClusterRole
	for _, u := range m.Of("ClusterRole") {
		if globalOnes(u) {
			roles = append(roles, typed[rbacv1.ClusterRole](t, u))
		}
	}
	bindings := mine("ClusterRoleBinding")
	if !on || lookup(sub, "rbac", "create") == false {
		if len(roles)+len(bindings) > 0 {
			t.Errorf("%s: globalServices.enabled=%v, rbac.create=%v, yet %d ClusterRoles and %d ClusterRoleBindings", w.Component, on, lookup(sub, "rbac", "create"), len(roles), len(bindings))
		}
		return
	}
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("%s with global services: %d ClusterRoles and %d ClusterRoleBindings, want 1 each", w.Component, len(roles), len(bindings))
	}
	role, b := roles[0], bindings[0]
	got := map[resourceRef][]string{}
	for _, rule := range role.Rules {
		if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
			t.Errorf("ClusterRole %s: rule %v is narrower or other than the expected ones", role.Name, rule)
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				ref := resourceRef{g, r}
				got[ref] = slices.Compact(slices.Sorted(slices.Values(append(got[ref], rule.Verbs...))))
			}
		}
	}
	if !maps.EqualFunc(got, globalRules, slices.Equal) {
		t.Errorf("ClusterRole %s grants %v, want exactly %v", role.Name, got, globalRules)
	}
	sa := w.Pod.Spec.ServiceAccountName
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != role.Name ||
		len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != sa || b.Subjects[0].Namespace != m.Release.Namespace {
		t.Errorf("ClusterRoleBinding %s binds %s %s to %v, want ClusterRole %s to ServiceAccount %s/%s alone", b.Name, b.RoleRef.Kind, b.RoleRef.Name, b.Subjects, role.Name, m.Release.Namespace, sa)
	}
}

// envItem describes env item i of c for a message (i < 0: absent).
func envItem(c corev1.Container, i int) any {
	if i < 0 {
		return "absent"
	}
	return c.Env[i]
}

// The values of global services, in the umbrella and in the subchart alone: on by default with
// the controller's default selector and a ClusterRole, a selector of one's own, off (no
// ClusterRole, the variable empty), and no RBAC at all.
func TestGlobalServicesValues(t *testing.T) {
	all := filepath.Join(umbrellaChart, "ci", "all-values.yaml")
	subchart := filepath.Join(umbrellaChart, "charts", "service-mirror")
	tests := []struct {
		name, values    string
		alone           bool // the subchart alone, values at its top level
		wantEnv         string
		wantClusterRole bool
	}{
		{name: "default", wantEnv: "mirror.semaphore.uw.io/global-service=true", wantClusterRole: true},
		{name: "own selector", values: "serviceMirror: {globalServices: {labelSelector: 'global in (yes,true),team=platform'}}",
			wantEnv: "global in (yes,true),team=platform", wantClusterRole: true},
		{name: "off", values: "serviceMirror: {globalServices: {enabled: false}}"},
		{name: "off with a selector", values: "serviceMirror: {globalServices: {enabled: false, labelSelector: team=platform}}"},
		{name: "no RBAC", values: "serviceMirror: {rbac: {create: false}}", wantEnv: global.DefaultSelector},
		{name: "alone", alone: true, wantEnv: global.DefaultSelector, wantClusterRole: true},
		{name: "alone off", alone: true, values: "globalServices: {enabled: false}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *manifest
			var sub map[string]any
			if tt.alone {
				vals := valuesOf(t, nil, awsGlobals, tt.values)
				m = mustRender(t, subchart, vals)
				sub = effectiveValues(t, subchart, vals)
			} else {
				vals := valuesOf(t, []string{all}, tt.values)
				m = mustRender(t, umbrellaChart, vals)
				eff := effectiveValues(t, umbrellaChart, vals)
				sub, _ = eff["serviceMirror"].(map[string]any)
				checkUmbrella(t, m, eff)
			}
			w, err := m.Workload("service-mirror")
			if err != nil {
				t.Fatal(err)
			}
			// What the table says, independently of checkGlobalServices' reading of the values.
			if got := envValue(mainContainer(t, w), "SEMAPHORE_GLOBAL_LABEL_SELECTOR", "(absent)"); got != tt.wantEnv {
				t.Errorf("SEMAPHORE_GLOBAL_LABEL_SELECTOR=%q, want %q", got, tt.wantEnv)
			}
			var roles []string
			for _, u := range m.Of("ClusterRole") {
				if u.GetLabels()["app.kubernetes.io/component"] == "service-mirror" && !isLocalRangesRBAC(u) && !isMCSRBAC(u) {
					roles = append(roles, u.GetName())
				}
			}
			if (len(roles) > 0) != tt.wantClusterRole {
				t.Errorf("ClusterRoles of service-mirror %v, want one: %v", roles, tt.wantClusterRole)
			}
			checkGlobalServices(t, m, w, sub)
		})
	}
}
