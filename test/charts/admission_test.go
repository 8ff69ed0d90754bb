package charts_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
	wgcontroller "github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// The admission tests' own release and nodes, apart from the other tests' in the shared cluster.
const (
	admissionRelease = "admission"
	admissionNode    = "admission-n1"
	otherNode        = "admission-n2"
	// nodeNameExtra is the user info a pod-bound ServiceAccount token carries its pod's node in.
	nodeNameExtra = "authentication.kubernetes.io/node-name"
	// foreignAnnotation is someone else's annotation on the nodes.
	foreignAnnotation = "example.com/owner"
)

// semaphore-wireguard's ServiceAccount, which RBAC lets patch every Node, may patch only the Node
// its pod runs on, and only its own annotations there: the chart's ValidatingAdmissionPolicy,
// installed with the chart's RBAC into a real API server, checked with tokens the TokenRequest
// API issues for that ServiceAccount. The controller's own annotation patches (adding and
// removing a remote's) pass.
func TestWireguardChangesOnlyItsOwnNodesAnnotations(t *testing.T) {
	aws, gcp := clusters(t)
	ctx := context.Background()
	const namespace = "semaphore-admission-wireguard"
	m := install(t, gcp, umbrellaChart, admissionRelease, namespace, valuesOf(t, nil, awsGlobals, `
serviceMirror: {enabled: false}
policy: {enabled: false}
wireguard:
  listenPorts: {aws: 51821}
`))
	t.Cleanup(func() { uninstall(t, gcp, admissionRelease, namespace) })
	policy := admissionPolicyOf(t, m, "wireguard")
	w, err := m.Workload("wireguard")
	if err != nil {
		t.Fatal(err)
	}
	sa := w.Pod.Spec.ServiceAccountName

	peerstest.CreateNode(t, gcp.Client, admissionNode, "192.0.2.31", map[string]string{foreignAnnotation: "someone"}, "198.18.31.0/24")
	peerstest.CreateNode(t, gcp.Client, otherNode, "192.0.2.32", map[string]string{foreignAnnotation: "someone"}, "198.18.32.0/24")
	pod := podOnNode(t, gcp, namespace, sa, admissionNode)
	onNode := kubernetes.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, sa, pod))
	unbound := kubernetes.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, sa, nil))

	// The premise: the pod-bound token names the pod's node, the other none.
	if got := userExtra(t, onNode)[nodeNameExtra]; !slices.Equal(got, []string{admissionNode}) {
		t.Fatalf("a pod-bound token's %s is %v, want [%s]", nodeNameExtra, got, admissionNode)
	}
	if got, ok := userExtra(t, unbound)[nodeNameExtra]; ok {
		t.Fatalf("a token bound to no pod has %s %v", nodeNameExtra, got)
	}

	ours := peers.PubKeyAnnotation("aws")
	patch := func(c kubernetes.Interface, node, body string, dryRun bool) error {
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(body), opts)
		return err
	}
	ourAnnotation := fmt.Sprintf(`{"metadata":{"annotations":{%q:"key"}}}`, ours)
	// A policy is enforced a moment after it is created.
	testenv.Eventually(t, 30*time.Second, "the policy refuses a patch of another node", func() error {
		return policyRefusal(patch(onNode, otherNode, ourAnnotation, true), policy)
	})

	t.Run("its own node's annotations", func(t *testing.T) {
		if err := patch(onNode, admissionNode, ourAnnotation, false); err != nil {
			t.Fatalf("adding %s to its own node: %v", ours, err)
		}
		if err := patch(onNode, admissionNode, fmt.Sprintf(`{"metadata":{"annotations":{%q:"other-key"}}}`, ours), false); err != nil {
			t.Errorf("changing %s on its own node: %v", ours, err)
		}
		if err := patch(onNode, admissionNode, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, ours), false); err != nil {
			t.Errorf("removing %s from its own node: %v", ours, err)
		}
		// An active gateway says so with its term, and a gateway that stands down removes it.
		gateway := peers.GatewayAnnotation("aws")
		for _, value := range []string{`"3"`, "null"} {
			if err := patch(onNode, admissionNode, fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, gateway, value), false); err != nil {
				t.Errorf("setting %s to %s on its own node: %v", gateway, value, err)
			}
		}
	})

	t.Run("the controller's own patches", func(t *testing.T) {
		// Setup publishes the node's key and endpoint for aws, and a controller without aws
		// removes them: the patches annotateNode makes, sent with the pod's token.
		key := devicetest.Key(t)
		setupController(t, onNode, []remote.Cluster{{Name: "aws", Config: aws.Config, Client: aws.Client}},
			[]wgcontroller.RemoteDevice{{Remote: "aws", Device: peers.DeviceName("aws"), Key: key, ListenPort: 51821}})
		n, err := gcp.Client.CoreV1().Nodes().Get(ctx, admissionNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != key.PublicKey().String() {
			t.Errorf("pubKey annotation %q, want %q", got, key.PublicKey())
		}
		if got := n.Annotations[peers.EndpointAnnotation("aws")]; got != "192.0.2.31:51821" {
			t.Errorf("endpoint annotation %q, want 192.0.2.31:51821", got)
		}
		setupController(t, onNode, nil, nil)
		n, err = gcp.Client.CoreV1().Nodes().Get(ctx, admissionNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{peers.PubKeyAnnotation("aws"), peers.EndpointAnnotation("aws")} {
			if v, ok := n.Annotations[k]; ok {
				t.Errorf("%s=%q is still there after aws was removed", k, v)
			}
		}
		if n.Annotations[foreignAnnotation] != "someone" {
			t.Errorf("the controller changed %s: %v", foreignAnnotation, n.Annotations)
		}
	})

	t.Run("refused", func(t *testing.T) {
		before, err := gcp.Client.CoreV1().Nodes().Get(ctx, admissionNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			what   string
			client kubernetes.Interface
			node   string
			body   string
		}{
			{"its annotation on another node", onNode, otherNode, ourAnnotation},
			{"a label of its own node", onNode, admissionNode, `{"metadata":{"labels":{"example.com/role":"gateway"}}}`},
			{"its annotation and a label at once", onNode, admissionNode,
				fmt.Sprintf(`{"metadata":{"annotations":{%q:"key"},"labels":{"example.com/role":"gateway"}}}`, ours)},
			{"a foreign annotation added", onNode, admissionNode, `{"metadata":{"annotations":{"example.com/intruder":"yes"}}}`},
			{"a foreign annotation changed", onNode, admissionNode, fmt.Sprintf(`{"metadata":{"annotations":{%q:"semaphore"}}}`, foreignAnnotation)},
			{"a foreign annotation removed", onNode, admissionNode, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, foreignAnnotation)},
			{"an annotation of another wireguard.semaphore.uw.io key", onNode, admissionNode, `{"metadata":{"annotations":{"aws.wireguard.semaphore.uw.io/other":"x"}}}`},
			{"spec.unschedulable", onNode, admissionNode, `{"spec":{"unschedulable":true}}`},
			{"a taint", onNode, admissionNode, `{"spec":{"taints":[{"key":"example.com/t","effect":"NoSchedule"}]}}`},
			{"a finalizer", onNode, admissionNode, `{"metadata":{"finalizers":["example.com/keep"]}}`},
			{"an owner reference", onNode, admissionNode,
				fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}]}}`, pod.Name, pod.UID)},
			{"its annotation with a token bound to no pod", unbound, admissionNode, ourAnnotation},
		} {
			err := patch(tt.client, tt.node, tt.body, false)
			if refusal := policyRefusal(err, policy); refusal != nil {
				t.Errorf("%s: %v", tt.what, refusal)
				continue
			}
			t.Logf("%s: %v", tt.what, err)
		}
		after, err := gcp.Client.CoreV1().Nodes().Get(ctx, admissionNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("node %s changed: labels %v, annotations %v, spec %+v, finalizers %v, owners %v",
				after.Name, after.Labels, after.Annotations, after.Spec, after.Finalizers, after.OwnerReferences)
		}
	})

	t.Run("others' requests are not matched", func(t *testing.T) {
		if err := patch(gcp.Client, admissionNode, `{"metadata":{"labels":{"example.com/role":"gateway"}}}`, true); err != nil {
			t.Errorf("the admin's patch of a label: %v", err)
		}
	})
}

// semaphore-policy's ServiceAccount, which RBAC lets write every GlobalNetworkSet of its API
// group, may create, update and delete only sets of its own, and with global.adoptOriginal also
// take over (update into its own, or delete) the original semaphore-policy's: the chart's
// ValidatingAdmissionPolicy, installed with the chart's RBAC into a real API server, for both
// API groups as CRDs (where the kube-apiserver admits their requests).
func TestPolicyWritesOnlyItsOwnSets(t *testing.T) {
	_, gcp := clusters(t)
	for _, api := range []string{calico.APICRD, calico.APIv3} {
		t.Run(api, func(t *testing.T) { policyAdmissionScenario(t, gcp, api) })
	}
}

func policyAdmissionScenario(t *testing.T, gcp *testenv.Cluster, api string) {
	ctx := context.Background()
	const namespace = "semaphore-admission-policy"
	values := func(adopt bool) map[string]any {
		return valuesOf(t, nil, awsGlobals, fmt.Sprintf(`
global: {adoptOriginal: %t}
serviceMirror: {enabled: false}
wireguard: {enabled: false}
policy: {calicoAPI: %s}
`, adopt, api))
	}
	m := install(t, gcp, umbrellaChart, admissionRelease, namespace, values(false))
	t.Cleanup(func() { uninstall(t, gcp, admissionRelease, namespace) })
	policy := admissionPolicyOf(t, m, "policy")
	w, err := m.Workload("policy")
	if err != nil {
		t.Fatal(err)
	}
	res, err := calico.Resource(api)
	if err != nil {
		t.Fatal(err)
	}
	admin := dynamic.NewForConfigOrDie(gcp.Config).Resource(res)
	sets := dynamic.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, w.Pod.Spec.ServiceAccountName, nil)).Resource(res)

	// set builds a set of src's name with labels.
	set := func(src netset.Source, labels map[string]string, nets ...string) *unstructured.Unstructured {
		u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
			ObjectMeta: metav1.ObjectMeta{Name: netset.SetName(src), Labels: labels},
			Spec:       calico.GlobalNetworkSetSpec{Nets: nets},
		}, api)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// byAdmin creates a set that the ServiceAccount did not make, removed when the test ends.
	byAdmin := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		out, err := admin.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
		return out
	}
	// relabel returns u with its labels changed by edit.
	relabel := func(u *unstructured.Unstructured, edit func(map[string]string)) *unstructured.Unstructured {
		u = u.DeepCopy()
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		edit(l)
		u.SetLabels(l)
		return u
	}
	// intoOurs is what the controller writes on a set it adopts: its labels added to the set's.
	intoOurs := func(u *unstructured.Unstructured, src netset.Source) *unstructured.Unstructured {
		return relabel(u, func(l map[string]string) {
			for k, v := range netset.Labels(src) {
				l[k] = v
			}
		})
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	unmarked := set(netset.Source{Cluster: "aws", Namespace: "web", Name: "probe"}, map[string]string{"owner": "someone-else"}, "192.0.2.1/32")
	testenv.Eventually(t, 30*time.Second, "the policy refuses a set without our mark", func() error {
		_, err := sets.Create(ctx, unmarked, dryRun)
		return policyRefusal(err, policy)
	})

	foreignSrc := netset.Source{Cluster: "aws", Namespace: "web", Name: "foreign"}
	foreign := byAdmin(set(foreignSrc, map[string]string{"owner": "someone-else"}, "192.0.2.2/32"))
	originalSrc := netset.Source{Cluster: "aws", Namespace: "web", Name: "original"}
	original := byAdmin(set(originalSrc, map[string]string{
		netset.OriginalManagedBy: "semaphore-policy", netset.LabelCluster: "aws", netset.LabelNamespace: "web", netset.LabelName: "original",
	}, "192.0.2.3/32"))
	if _, ok := netset.MadeByOriginal(original.GetLabels()); !ok {
		t.Fatalf("the fixture's labels %v are not the original semaphore-policy's", original.GetLabels())
	}

	src := netset.Source{Cluster: "aws", Namespace: "web", Name: "frontend"}
	t.Run("its own sets", func(t *testing.T) {
		created, err := sets.Create(ctx, set(src, netset.Labels(src), "198.18.0.10/32"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a set of its own: %v", err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })
		next := created.DeepCopy()
		if err := unstructured.SetNestedStringSlice(next.Object, []string{"198.18.0.10/32", "198.18.0.11/32"}, "spec", "nets"); err != nil {
			t.Fatal(err)
		}
		updated, err := sets.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("updating a set of its own: %v", err)
		}
		for what, edit := range map[string]func(map[string]string){
			"its mark removed":      func(l map[string]string) { delete(l, "app.kubernetes.io/managed-by") },
			"another component's":   func(l map[string]string) { l["app.kubernetes.io/managed-by"] = "someone-else" },
			"its source changed":    func(l map[string]string) { l[netset.LabelName] = "backend" },
			"a source label gone":   func(l map[string]string) { delete(l, netset.LabelNamespace) },
			"its cluster changed":   func(l map[string]string) { l[netset.LabelCluster] = "merit" },
			"an empty source label": func(l map[string]string) { l[netset.LabelName] = "" },
		} {
			_, err := sets.Update(ctx, relabel(updated, edit), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err := policyRefusal(err, policy); err != nil {
				t.Errorf("updating a set of its own with %s: %v", what, err)
			}
		}
		uid, rv := updated.GetUID(), updated.GetResourceVersion()
		if err := sets.Delete(ctx, updated.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil {
			t.Errorf("deleting a set of its own: %v", err)
		}
	})

	t.Run("others' sets", func(t *testing.T) {
		if err := policyRefusal(errOf(sets.Create(ctx, unmarked, metav1.CreateOptions{})), policy); err != nil {
			t.Errorf("creating a set without its mark: %v", err)
		}
		for _, tt := range []struct {
			whose string
			u     *unstructured.Unstructured
			src   netset.Source
		}{{"someone else's", foreign, foreignSrc}, {"the original semaphore-policy's (adoptOriginal off)", original, originalSrc}} {
			if err := policyRefusal(errOf(sets.Update(ctx, intoOurs(tt.u, tt.src), metav1.UpdateOptions{})), policy); err != nil {
				t.Errorf("updating %s set into its own: %v", tt.whose, err)
			}
			if err := policyRefusal(sets.Delete(ctx, tt.u.GetName(), metav1.DeleteOptions{}), policy); err != nil {
				t.Errorf("deleting %s set: %v", tt.whose, err)
			}
		}
	})

	t.Run("the original's sets with adoptOriginal", func(t *testing.T) {
		upgrade(t, gcp, umbrellaChart, admissionRelease, namespace, values(true))
		adopted := intoOurs(original, originalSrc)
		testenv.Eventually(t, 30*time.Second, "the upgraded policy lets the original's set be adopted", func() error {
			_, err := sets.Update(ctx, adopted, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
		if _, err := sets.Update(ctx, adopted, metav1.UpdateOptions{}); err != nil {
			t.Errorf("adopting the original's set: %v", err)
		}
		otherSrc := netset.Source{Cluster: "aws", Namespace: "web", Name: "original-gone"}
		other := byAdmin(set(otherSrc, map[string]string{
			netset.OriginalManagedBy: "semaphore-policy", netset.LabelCluster: "aws", netset.LabelNamespace: "web", netset.LabelName: otherSrc.Name,
		}, "192.0.2.4/32"))
		if err := sets.Delete(ctx, other.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting an original's set no pod stands for: %v", err)
		}
		if err := policyRefusal(errOf(sets.Update(ctx, intoOurs(foreign, foreignSrc), metav1.UpdateOptions{})), policy); err != nil {
			t.Errorf("updating someone else's set into its own: %v", err)
		}
	})
}

// The admission policies are rendered by default where the API server serves them, for
// exactly the component's ServiceAccount and the API group it writes, and not when turned off,
// without the chart's RBAC (which they narrow) or where admissionregistration.k8s.io/v1 has no
// ValidatingAdmissionPolicy (before Kubernetes 1.30).
func TestAdmissionPoliciesRender(t *testing.T) {
	base := awsGlobals + "wireguard:\n  listenPorts:\n    aws: 51821\n"
	tests := []struct {
		name      string
		overrides string
		// served is whether the API server serves ValidatingAdmissionPolicy.
		served bool
		// want are the components that get a policy.
		want []string
		// group is the API group the policy of semaphore-policy matches.
		group string
	}{
		{name: "defaults", served: true, want: []string{"policy", "wireguard"}, group: "projectcalico.org"},
		{name: "calico CRDs", overrides: "policy: {calicoAPI: crd.projectcalico.org/v1}", served: true, want: []string{"policy", "wireguard"}, group: "crd.projectcalico.org"},
		{
			name:      "own ServiceAccounts",
			overrides: "policy: {serviceAccount: {create: false, name: sets}}\nwireguard: {serviceAccount: {create: false, name: nodes}}",
			served:    true, want: []string{"policy", "wireguard"}, group: "projectcalico.org",
		},
		{name: "turned off", overrides: "policy: {admissionPolicy: {enabled: false}}\nwireguard: {admissionPolicy: {enabled: false}}", served: true},
		{name: "wireguard's turned off", overrides: "wireguard: {admissionPolicy: {enabled: false}}", served: true, want: []string{"policy"}, group: "projectcalico.org"},
		{name: "without RBAC", overrides: "policy: {rbac: {create: false}}\nwireguard: {rbac: {create: false}}", served: true},
		{name: "not served", served: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, nil, base, tt.overrides)
			m := renderServing(t, vals, tt.served)
			var got []string
			for _, u := range m.Of("ValidatingAdmissionPolicy") {
				comp := u.GetLabels()["app.kubernetes.io/component"]
				got = append(got, comp)
				p := typed[admissionregistrationv1.ValidatingAdmissionPolicy](t, u)
				w, err := m.Workload(comp)
				if err != nil {
					t.Fatal(err)
				}
				user := serviceAccountUser(releaseNamespace, w.Pod.Spec.ServiceAccountName)
				if len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != fmt.Sprintf("request.userInfo.username == %q", user) {
					t.Errorf("%s: match conditions %+v, want the requests of %s alone", p.Name, p.Spec.MatchConditions, user)
				}
				if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
					t.Errorf("%s: failure policy %v, want Fail", p.Name, p.Spec.FailurePolicy)
				}
				rules := p.Spec.MatchConstraints.ResourceRules
				wantGroup := tt.group
				if comp == "wireguard" {
					wantGroup = ""
				}
				if len(rules) != 1 || !slices.Equal(rules[0].APIGroups, []string{wantGroup}) {
					t.Errorf("%s: resource rules %+v, want group %q only", p.Name, rules, wantGroup)
				}
				if m.Get("ValidatingAdmissionPolicyBinding", p.Name) == nil {
					t.Errorf("%s: no binding", p.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("policies of %v, want %v", got, tt.want)
			}
			if n, want := len(m.Of("ValidatingAdmissionPolicyBinding")), len(tt.want); n != want {
				t.Errorf("%d bindings, want %d", n, want)
			}
		})
	}
}

// renderServing renders the umbrella offline as helmchart.Render does, for an API server that
// serves ValidatingAdmissionPolicy or not.
func renderServing(t *testing.T, vals map[string]any, served bool) *manifest {
	t.Helper()
	if served {
		return mustRender(t, umbrellaChart, vals)
	}
	kv, err := chartutil.ParseKubeVersion("v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly, install.DryRun = true, true
	install.ReleaseName, install.Namespace = releaseName, releaseNamespace
	install.KubeVersion = kv
	install.APIVersions = slices.DeleteFunc(slices.Clone(helmchart.ExtraAPIVersions), func(v string) bool {
		return strings.HasPrefix(v, "admissionregistration.k8s.io/")
	})
	rel, err := install.Run(loadChart(t, umbrellaChart), vals)
	if err != nil {
		t.Fatal(err)
	}
	return parseRelease(t, rel)
}

// admissionPolicyOf returns the name of the ValidatingAdmissionPolicy that release m renders for
// component, after checking that a binding denies what it refuses.
func admissionPolicyOf(t *testing.T, m *manifest, component string) string {
	t.Helper()
	var policies []string
	for _, u := range m.Of("ValidatingAdmissionPolicy") {
		if u.GetLabels()["app.kubernetes.io/component"] == component {
			policies = append(policies, u.GetName())
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%s: %d ValidatingAdmissionPolicies, want 1 (objects: %v)", component, len(policies), m.Kinds())
	}
	b := m.Get("ValidatingAdmissionPolicyBinding", policies[0])
	if b == nil {
		t.Fatalf("ValidatingAdmissionPolicy %s has no binding of its name", policies[0])
	}
	name, _, _ := unstructured.NestedString(b.Object, "spec", "policyName")
	actions, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions")
	if name != policies[0] || !slices.Equal(actions, []string{"Deny"}) {
		t.Fatalf("binding %s: policy %q, actions %v; want %s, [Deny]", b.GetName(), name, actions, policies[0])
	}
	return policies[0]
}

// policyRefusal returns nil when err is policy's refusal, and an error saying what happened
// instead: the request passed, or failed for another reason (RBAC's refusals name no policy).
func policyRefusal(err error, policy string) error {
	switch {
	case err == nil:
		return fmt.Errorf("allowed, want refused by ValidatingAdmissionPolicy %s", policy)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'"):
		return fmt.Errorf("%w; want refused by ValidatingAdmissionPolicy %s", err, policy)
	}
	return nil
}

// errOf is the error of a call that also returns an object.
func errOf(_ *unstructured.Unstructured, err error) error { return err }

// podOnNode creates a Pod of ServiceAccount sa bound to node, as the scheduler leaves a
// DaemonSet's pod (nothing runs it here), and deletes it when the test ends.
func podOnNode(t *testing.T, c *testenv.Cluster, namespace, sa, node string) *corev1.Pod {
	t.Helper()
	pod, err := c.Client.CoreV1().Pods(namespace).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wireguard-on-" + node, Namespace: namespace},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			NodeName:           node,
			Containers:         []corev1.Container{{Name: "wireguard", Image: "ghcr.io/kube-semaphore/semaphore-wireguard"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return pod
}

// serviceAccountConfig is a client configuration of c that authenticates with nothing but a
// token the TokenRequest API issues for ServiceAccount namespace/sa: bound to pod, as the
// kubelet's projected token of a pod is, or, with a nil pod, to no object.
func serviceAccountConfig(t *testing.T, c *testenv.Cluster, namespace, sa string, pod *corev1.Pod) *rest.Config {
	t.Helper()
	spec := authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}
	if pod != nil {
		spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", namespace, sa, err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS = -1
	return cfg
}

// userExtra is the extra user info the API server authenticates client's requests with.
func userExtra(t *testing.T, client kubernetes.Interface) map[string]authenticationv1.ExtraValue {
	t.Helper()
	who, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return who.Status.UserInfo.Extra
}

// setupController runs the wireguard controller's Setup for admissionNode with local as its
// client of the local cluster: it publishes the devices' keys and endpoints in the node's
// annotations and removes those of remotes no longer configured, as a starting pod does.
func setupController(t *testing.T, local kubernetes.Interface, remotes []remote.Cluster, devs []wgcontroller.RemoteDevice) {
	t.Helper()
	log := testLogger(t)
	reg := prometheus.NewRegistry()
	in := daemon.NewInstruments(reg, wgapp.MetricsPrefix, time.Second, log)
	ctrl, err := wgcontroller.New(wgcontroller.Options{LocalCluster: "gcp", NodeName: admissionNode, MTU: mtu.Fixed(1420), ResyncPeriod: time.Minute},
		local, remotes, devs, devicetest.New(), in.Health, wgcontroller.NewMetrics(in.Factory, reg), in.Queue, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Setup(context.Background()); err != nil {
		t.Fatalf("setting up with the pod's token: %v", err)
	}
}

// impersonatingPod is impersonating user with the user info a pod-bound token of a pod on node
// carries besides its name: the node's name, which the wireguard chart's admission policy
// confines the ServiceAccount's Node patches to.
func impersonatingPod(t testing.TB, c *testenv.Cluster, user, node string) string {
	t.Helper()
	path := impersonating(t, c, user)
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.ImpersonateUserExtra = map[string][]string{nodeNameExtra: {node}}
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
