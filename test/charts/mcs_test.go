package charts_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	"sigs.k8s.io/yaml"
)

// mcsRules are what the Multi-Cluster Services API's ClusterRole grants, and nothing else:
// ServiceImports, derived Services and imported EndpointSlices in every namespace, the status of
// ServiceExports, Namespaces read, Events.
var mcsRules = map[resourceRef][]string{
	{"multicluster.x-k8s.io", "serviceexports"}:        {"get", "list", "watch"},
	{"multicluster.x-k8s.io", "serviceexports/status"}: {"update"},
	{"multicluster.x-k8s.io", "serviceimports"}:        {"create", "delete", "get", "list", "update", "watch"},
	{"", "services"}:                       {"create", "delete", "get", "list", "update", "watch"},
	{"discovery.k8s.io", "endpointslices"}: {"create", "delete", "get", "list", "update", "watch"},
	{"", "namespaces"}:                     {"get", "list", "watch"},
	{"", "events"}:                         {"create", "patch"},
}

func isMCSRBAC(u *unstructured.Unstructured) bool { return strings.HasSuffix(u.GetName(), "-mcs") }

// checkMCS checks what the Multi-Cluster Services API takes from the service mirror's chart,
// with the subchart's values sub: SEMAPHORE_MCS_ENABLED says mcs.enabled (off by default); while
// it is on and RBAC is created, one ClusterRole grants mcsRules and nothing else, bound to the
// workload's ServiceAccount alone; otherwise there is none.
func checkMCS(t *testing.T, m *manifest, w workload, sub map[string]any) {
	t.Helper()
	on := lookup(sub, "mcs", "enabled") == true
	c := mainContainer(t, w)
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SEMAPHORE_MCS_ENABLED" })
	if i < 0 || c.Env[i].Value != map[bool]string{true: "true", false: "false"}[on] {
		t.Errorf("%s: SEMAPHORE_MCS_ENABLED is %v, want %v", w.Name, envItem(c, i), on)
	}
	var roles []*rbacv1.ClusterRole
	var bindings []*rbacv1.ClusterRoleBinding
	for _, u := range m.Of("ClusterRole") {
		if isMCSRBAC(u) {
			roles = append(roles, typed[rbacv1.ClusterRole](t, u))
		}
	}
	for _, u := range m.Of("ClusterRoleBinding") {
		if isMCSRBAC(u) {
			bindings = append(bindings, typed[rbacv1.ClusterRoleBinding](t, u))
		}
	}
	if !on || lookup(sub, "rbac", "create") == false {
		if len(roles)+len(bindings) > 0 {
			t.Errorf("mcs.enabled=%v, rbac.create=%v, yet %d ClusterRoles and %d bindings for it", on, lookup(sub, "rbac", "create"), len(roles), len(bindings))
		}
		return
	}
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("%d ClusterRoles and %d bindings for the Multi-Cluster Services API, want 1 each", len(roles), len(bindings))
	}
	got := map[resourceRef][]string{}
	for _, rule := range roles[0].Rules {
		if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
			t.Errorf("ClusterRole %s: rule %v is narrower or other than the expected ones", roles[0].Name, rule)
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				ref := resourceRef{g, r}
				got[ref] = slices.Compact(slices.Sorted(slices.Values(append(got[ref], rule.Verbs...))))
			}
		}
	}
	if !maps.EqualFunc(got, mcsRules, slices.Equal) {
		t.Errorf("ClusterRole %s grants %v, want exactly %v", roles[0].Name, got, mcsRules)
	}
	b := bindings[0]
	if b.RoleRef.Name != roles[0].Name || len(b.Subjects) != 1 || b.Subjects[0].Name != w.Pod.Spec.ServiceAccountName || b.Subjects[0].Namespace != m.Release.Namespace {
		t.Errorf("ClusterRoleBinding %s binds %s to %v, want the workload's ServiceAccount alone", b.Name, b.RoleRef.Name, b.Subjects)
	}
}

// The service mirror's chart installs the Multi-Cluster Services API's CRDs (crds/), exactly as
// the API module the controller is built with has them: ServiceExport and ServiceImport, v1alpha1
// and v1beta1 served, v1beta1 stored.
func TestChartInstallsTheMCSCRDs(t *testing.T) {
	dir := filepath.Join(umbrellaChart, "charts", "service-mirror", "crds")
	for file, embedded := range map[string][]byte{
		"multicluster.x-k8s.io_serviceexports.yaml": mcscrd.ServiceExportCRD,
		"multicluster.x-k8s.io_serviceimports.yaml": mcscrd.ServiceImportCRD,
	} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, embedded) {
			t.Errorf("%s differs from the mcs-api module's; copy it from sigs.k8s.io/mcs-api/config/crd", file)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		var served, stored []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				stored = append(stored, v.Name)
			}
		}
		if crd.Spec.Group != "multicluster.x-k8s.io" || !slices.Equal(served, []string{"v1alpha1", "v1beta1"}) || !slices.Equal(stored, []string{"v1beta1"}) {
			t.Errorf("%s: group %s, served %v, stored %v", file, crd.Spec.Group, served, stored)
		}
	}
}
