package charts_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// mcsRules are what the Multi-Cluster Services API's ClusterRole grants, and nothing else:
// ServiceImports, derived Services and imported EndpointSlices in every namespace, the status of
// ServiceExports, Namespaces read, Events; and clusterIDRule.
var mcsRules = map[resourceRef][]string{
	{"multicluster.x-k8s.io", "serviceexports"}:        {"get", "list", "watch"},
	{"multicluster.x-k8s.io", "serviceexports/status"}: {"update"},
	{"multicluster.x-k8s.io", "serviceimports"}:        {"create", "delete", "get", "list", "update", "watch"},
	{"", "services"}:                       {"create", "delete", "get", "list", "update", "watch"},
	{"discovery.k8s.io", "endpointslices"}: {"create", "delete", "get", "list", "update", "watch"},
	{"", "namespaces"}:                     {"get", "list", "watch"},
	{"", "events"}:                         {"create", "patch"},
}

// clusterIDRule is the one rule narrowed to a name, in the MCS ClusterRole and semaphore-remote's
// alike: get of the ClusterProperty that holds the cluster's ID.
var clusterIDRule = rbacv1.PolicyRule{APIGroups: []string{"about.k8s.io"}, Resources: []string{"clusterproperties"}, ResourceNames: []string{mcs.ClusterIDProperty}, Verbs: []string{"get"}}

// isClusterIDRule reports whether rule names resources by name, and is clusterIDRule.
func isClusterIDRule(t *testing.T, role string, rule rbacv1.PolicyRule) bool {
	t.Helper()
	if len(rule.ResourceNames) == 0 {
		return false
	}
	if !equality.Semantic.DeepEqual(rule, clusterIDRule) {
		t.Errorf("ClusterRole %s: rule %v names resources, and is not %v", role, rule, clusterIDRule)
	}
	return true
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
	clusterID := 0
	for _, rule := range roles[0].Rules {
		if isClusterIDRule(t, roles[0].Name, rule) {
			clusterID++
			continue
		}
		if len(rule.NonResourceURLs) > 0 {
			t.Errorf("ClusterRole %s: rule %v is narrower or other than the expected ones", roles[0].Name, rule)
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				ref := resourceRef{g, r}
				got[ref] = slices.Compact(slices.Sorted(slices.Values(append(got[ref], rule.Verbs...))))
			}
		}
	}
	if !maps.EqualFunc(got, mcsRules, slices.Equal) || clusterID != 1 {
		t.Errorf("ClusterRole %s grants %v and %d times %v, want exactly %v and it once", roles[0].Name, got, clusterID, clusterIDRule, mcsRules)
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

// The service mirror's ServiceAccount, which the Multi-Cluster Services API's ClusterRole lets
// write every Service, EndpointSlice and ServiceImport, may write outside its mirror namespace
// only those of its own: the chart's ValidatingAdmissionPolicy, installed with the chart's RBAC
// into a real API server, checked with a token the TokenRequest API issues for that
// ServiceAccount. What the controller itself writes passes; in the mirror namespace the Role
// alone applies.
func TestServiceMirrorWritesOnlyItsOwnImportObjects(t *testing.T) {
	_, gcp := clusters(t)
	ctx := context.Background()
	const namespace, appNS = "semaphore-admission-mcs", "admission-mcs-app"
	m := install(t, gcp, umbrellaChart, admissionRelease, namespace, valuesOf(t, nil, awsGlobals, `
serviceMirror: {mcs: {enabled: true}, mirrorNamespace: {name: semaphore-admission-mirrors}}
policy: {enabled: false}
wireguard: {enabled: false}
`))
	t.Cleanup(func() { uninstall(t, gcp, admissionRelease, namespace) })
	policy := admissionPolicyOf(t, m, "service-mirror")
	w, err := m.Workload("service-mirror")
	if err != nil {
		t.Fatal(err)
	}
	if err := gcp.EnsureNamespace(ctx, appNS); err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, w.Pod.Spec.ServiceAccountName, nil))
	k := mcs.Key{Namespace: appNS, Name: "api"}
	ours := mcs.DerivedService(k, mcs.Import{Spec: mcsv1beta1.ServiceImportSpec{Ports: []mcsv1beta1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	foreign := ours.DeepCopy()
	foreign.Name, foreign.Labels = "someone-elses", map[string]string{"owner": "someone-else"}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	testenv.Eventually(t, 30*time.Second, "the policy refuses a Service without our mark", func() error {
		_, err := sa.CoreV1().Services(appNS).Create(ctx, foreign, dryRun)
		return policyRefusal(err, policy)
	})
	created, err := sa.CoreV1().Services(appNS).Create(ctx, ours, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a derived Service of its own: %v", err)
	}
	unmarked := created.DeepCopy()
	delete(unmarked.Labels, ownership.ManagedBy)
	if _, err := sa.CoreV1().Services(appNS).Update(ctx, unmarked, metav1.UpdateOptions{}); policyRefusal(err, policy) != nil {
		t.Errorf("removing our mark: %v", policyRefusal(err, policy))
	}
	moved := created.DeepCopy()
	moved.Labels[mcsv1beta1.LabelServiceName] = "other"
	if _, err := sa.CoreV1().Services(appNS).Update(ctx, moved, metav1.UpdateOptions{}); policyRefusal(err, policy) != nil {
		t.Errorf("moving it to another exported Service: %v", policyRefusal(err, policy))
	}
	if err := sa.CoreV1().Services(appNS).Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a Service of its own: %v", err)
	}

	byAdmin, err := gcp.Client.CoreV1().Services(appNS).Create(ctx, foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = gcp.Client.CoreV1().Services(appNS).Delete(context.Background(), byAdmin.Name, metav1.DeleteOptions{})
	})
	if err := sa.CoreV1().Services(appNS).Delete(ctx, byAdmin.Name, metav1.DeleteOptions{}); policyRefusal(err, policy) != nil {
		t.Errorf("deleting someone else's Service: %v", policyRefusal(err, policy))
	}
	taken := byAdmin.DeepCopy()
	taken.Labels = mcs.Labels(k)
	if _, err := sa.CoreV1().Services(appNS).Update(ctx, taken, metav1.UpdateOptions{}); policyRefusal(err, policy) != nil {
		t.Errorf("taking someone else's Service over: %v", policyRefusal(err, policy))
	}

	imports := mcsClientOf(t, serviceAccountConfig(t, gcp, namespace, w.Pod.Spec.ServiceAccountName, nil)).MulticlusterV1beta1().ServiceImports(appNS)
	foreignImport := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 80}}}}
	if _, err := imports.Create(ctx, foreignImport, dryRun); policyRefusal(err, policy) != nil {
		t.Errorf("creating a ServiceImport without our mark: %v", policyRefusal(err, policy))
	}
	ourImport := mcs.ServiceImport(k, mcs.Import{From: "gcp", Spec: foreignImport.Spec}, nil)
	if _, err := imports.Create(ctx, ourImport, dryRun); err != nil {
		t.Errorf("creating a ServiceImport of its own: %v", err)
	}

	mirrors := "semaphore-admission-mirrors"
	mirror := foreign.DeepCopy()
	mirror.Namespace = mirrors
	if _, err := sa.CoreV1().Services(mirrors).Create(ctx, mirror, dryRun); err != nil {
		t.Errorf("in the mirror namespace, where the policy does not apply: %v", err)
	}
}

func mcsClientOf(t *testing.T, cfg *rest.Config) mcsclient.Interface {
	t.Helper()
	c, err := mcscontroller.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
