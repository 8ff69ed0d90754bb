package charts_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// hookName is the name of the uninstall hook's objects of workload w: "<fullname>-uninstall",
// a fullname too long for a Job name (63 characters) cut and told apart by a hash of it.
func hookName(w workload) string {
	name := w.Name
	if len(name) > 53 {
		sum := sha256.Sum256([]byte(name))
		name = strings.TrimSuffix(name[:42], "-") + "-" + hex.EncodeToString(sum[:])[:10]
	}
	return name + "-uninstall"
}

// isHook tells a Helm hook (the charts' uninstall hooks) from the release's own objects: Helm
// makes a pre-delete hook only when it uninstalls.
func isHook(o *unstructured.Unstructured) bool {
	_, ok := o.GetAnnotations()[helmchart.HookAnnotation]
	return ok
}

// hookObjects are the Helm hooks of m named name.
func hookObjects(m *manifest, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.Objects {
		if isHook(o) && o.GetName() == name {
			out = append(out, o)
		}
	}
	return out
}

// wantsUninstallHook tells whether the subchart values sub render the component's uninstall
// hook: unless uninstall.cleanUp is false, or the service mirror keeps its mirrors.
func wantsUninstallHook(component string, sub map[string]any) bool {
	if lookup(sub, "uninstall", "cleanUp") == false {
		return false
	}
	return component != "service-mirror" || lookup(sub, "uninstall", "keepMirrors") != true
}

// uninstallTimeout is uninstall.timeout of the subchart values sub (default 5m).
func uninstallTimeout(t *testing.T, sub map[string]any) (string, time.Duration) {
	t.Helper()
	s := "5m"
	if v := lookup(sub, "uninstall", "timeout"); v != nil {
		s = str(v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("uninstall.timeout %q: %v", s, err)
	}
	return s, d
}

// checkUninstallHook checks the pre-delete hook that makes `helm uninstall` remove what w's
// component made (templates/uninstall.yaml): rendered unless the values turn it off, as a
// ServiceAccount, Role and RoleBinding made before the Job, all deleted once they succeeded.
func checkUninstallHook(t *testing.T, m *manifest, w workload, sub map[string]any) {
	t.Helper()
	name := hookName(w)
	objs := hookObjects(m, name)
	if !wantsUninstallHook(w.Component, sub) {
		if len(objs) > 0 {
			t.Errorf("%s: uninstall hook rendered (%d objects %s) though the values turn it off", w.Component, len(objs), name)
		}
		return
	}
	weights := map[string]string{"ServiceAccount": "-10", "Role": "-10", "RoleBinding": "-10", "Job": "0"}
	kinds := maps.Clone(weights)
	for _, o := range objs {
		what := fmt.Sprintf("%s %s (%s)", o.GetKind(), o.GetName(), m.Source[o])
		want := map[string]string{
			"helm.sh/hook":               "pre-delete",
			"helm.sh/hook-weight":        weights[o.GetKind()],
			"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
		}
		if diff := cmp.Diff(want, o.GetAnnotations()); diff != "" {
			t.Errorf("%s: annotations (-want +got):\n%s", what, diff)
		}
		if o.GetNamespace() != m.Release.Namespace || o.GetLabels()["app.kubernetes.io/component"] != "uninstall" {
			t.Errorf("%s: in namespace %q with labels %v, want the release namespace and component uninstall", what, o.GetNamespace(), o.GetLabels())
		}
		delete(kinds, o.GetKind())
	}
	if len(kinds) > 0 || len(objs) != 4 {
		t.Fatalf("%s: uninstall hook %s is %d objects, missing %v; want a ServiceAccount, Role, RoleBinding and Job", w.Component, name, len(objs), kinds)
	}
	checkUninstallHookRBAC(t, m, w, name)
	checkUninstallHookJob(t, m, w, sub, typed[batchv1.Job](t, m.Get("Job", name)))
}

// checkUninstallHookRBAC checks that the hook's ServiceAccount may get and patch w and nothing
// else: one Role of one rule, bound to it alone, and no other binding of the release names it.
func checkUninstallHookRBAC(t *testing.T, m *manifest, w workload, name string) {
	t.Helper()
	role := typed[rbacv1.Role](t, m.Get("Role", name))
	want := []rbacv1.PolicyRule{{
		APIGroups:     []string{"apps"},
		Resources:     []string{strings.ToLower(w.Kind) + "s"},
		ResourceNames: []string{w.Name},
		Verbs:         []string{"get", "patch"},
	}}
	if diff := cmp.Diff(want, role.Rules); diff != "" {
		t.Errorf("Role %s: rules (-want +got):\n%s", name, diff)
	}
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: m.Release.Namespace}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range m.Of(kind) {
			b := typed[rbacv1.RoleBinding](t, u)
			if !slices.Contains(b.Subjects, sa) {
				continue
			}
			if kind != "RoleBinding" || b.Name != name || b.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}) || len(b.Subjects) != 1 {
				t.Errorf("%s %s binds the uninstall hook's ServiceAccount %s to %v (subjects %v), want Role %s alone", kind, b.Name, name, b.RoleRef, b.Subjects, name)
			}
		}
	}
	if b := m.Get("RoleBinding", name); b == nil || !slices.Contains(typed[rbacv1.RoleBinding](t, b).Subjects, sa) {
		t.Errorf("RoleBinding %s does not bind ServiceAccount %s", name, name)
	}
}

// checkUninstallHookJob checks the hook's Job: the component's image with args
// ["uninstall-hook"], the env that names w and its container, a deadline a minute after the
// timeout, restricted like every container, on the nodes w's pods may run on, and selected by
// none of the component's selectors.
func checkUninstallHookJob(t *testing.T, m *manifest, w workload, sub map[string]any, job *batchv1.Job) {
	t.Helper()
	timeout, d := uninstallTimeout(t, sub)
	if ptr.Deref(job.Spec.BackoffLimit, 6) != 1 || ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0) != int64(math.Ceil(d.Seconds()))+60 {
		t.Errorf("Job %s: backoffLimit %v, activeDeadlineSeconds %v; want 1 and %s + 60 s", job.Name, job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds, timeout)
	}
	spec := job.Spec.Template.Spec
	main := mainContainer(t, w)
	if spec.ServiceAccountName != job.Name || spec.RestartPolicy != corev1.RestartPolicyNever || len(spec.Containers) != 1 {
		t.Fatalf("Job %s: ServiceAccount %q, restartPolicy %q, %d containers; want %s, Never, 1", job.Name, spec.ServiceAccountName, spec.RestartPolicy, len(spec.Containers), job.Name)
	}
	c := spec.Containers[0]
	if c.Image != main.Image || c.ImagePullPolicy != main.ImagePullPolicy || !slices.Equal(c.Args, []string{"uninstall-hook"}) || len(c.Command) > 0 {
		t.Errorf("Job %s runs %s (%s) %v %v, want %s's image %s (%s) with args [uninstall-hook]", job.Name, c.Image, c.ImagePullPolicy, c.Command, c.Args, w.Name, main.Image, main.ImagePullPolicy)
	}
	wantEnv := []corev1.EnvVar{
		{Name: "SEMAPHORE_UNINSTALL_WORKLOAD", Value: strings.ToLower(w.Kind) + "/" + w.Name},
		{Name: "SEMAPHORE_UNINSTALL_CONTAINER", Value: main.Name},
		{Name: "SEMAPHORE_UNINSTALL_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "SEMAPHORE_UNINSTALL_TIMEOUT", Value: timeout},
	}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("Job %s: env (-want +got):\n%s", job.Name, diff)
	}
	psc, sc := ptr.Deref(spec.SecurityContext, corev1.PodSecurityContext{}), ptr.Deref(c.SecurityContext, corev1.SecurityContext{})
	restricted := ptr.Deref(psc.RunAsNonRoot, false) && ptr.Deref(psc.RunAsUser, 0) == 65532 &&
		ptr.Deref(sc.RunAsNonRoot, false) && ptr.Deref(sc.RunAsUser, 0) == 65532 &&
		ptr.Deref(sc.ReadOnlyRootFilesystem, false) && !ptr.Deref(sc.AllowPrivilegeEscalation, true) && !ptr.Deref(sc.Privileged, false) &&
		sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0 &&
		sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault &&
		!spec.HostNetwork && !spec.HostPID && len(spec.Volumes) == 0
	if !restricted {
		t.Errorf("Job %s is not restricted: pod %+v, container %+v", job.Name, psc, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("Job %s: resources %v, want CPU and memory requests and a memory limit", job.Name, c.Resources)
	}
	if !cmp.Equal(spec.NodeSelector, w.Pod.Spec.NodeSelector) || !cmp.Equal(spec.Tolerations, w.Pod.Spec.Tolerations) || !cmp.Equal(spec.ImagePullSecrets, w.Pod.Spec.ImagePullSecrets) {
		t.Errorf("Job %s: nodeSelector %v, tolerations %v, imagePullSecrets %v; want %s's: %v, %v, %v", job.Name,
			spec.NodeSelector, spec.Tolerations, spec.ImagePullSecrets, w.Name, w.Pod.Spec.NodeSelector, w.Pod.Spec.Tolerations, w.Pod.Spec.ImagePullSecrets)
	}
	for what, sel := range podSelectors(t, m) {
		if sel.Matches(labels.Set(job.Spec.Template.Labels)) {
			t.Errorf("%s selects the pod of uninstall hook %s (labels %v)", what, job.Name, job.Spec.Template.Labels)
		}
	}
}

// podSelectors are the release's selectors of pods, by "<kind> <name>": its workloads',
// PodDisruptionBudgets', NetworkPolicies', Services' and PodMonitors'.
func podSelectors(t *testing.T, m *manifest) map[string]labels.Selector {
	t.Helper()
	selectors := map[string]*metav1.LabelSelector{}
	for _, o := range m.Objects {
		what := o.GetKind() + " " + o.GetName()
		switch o.GetKind() {
		case "Deployment":
			selectors[what] = typed[appsv1.Deployment](t, o).Spec.Selector
		case "DaemonSet":
			selectors[what] = typed[appsv1.DaemonSet](t, o).Spec.Selector
		case "PodDisruptionBudget":
			selectors[what] = typed[policyv1.PodDisruptionBudget](t, o).Spec.Selector
		case "NetworkPolicy":
			selectors[what] = &typed[networkingv1.NetworkPolicy](t, o).Spec.PodSelector
		case "Service":
			// A Service without a selector selects no pod.
			if s := typed[corev1.Service](t, o).Spec.Selector; len(s) > 0 {
				selectors[what] = &metav1.LabelSelector{MatchLabels: s}
			}
		case "PodMonitor":
			sel, _, _ := unstructured.NestedMap(o.Object, "spec", "selector")
			selectors[what] = typed[metav1.LabelSelector](t, &unstructured.Unstructured{Object: sel})
		}
	}
	out := map[string]labels.Selector{}
	for what, s := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out[what] = sel
	}
	return out
}

// The uninstall hook follows its values: every component has one by default; cleanUp false
// takes a component's away, keepMirrors the service mirror's alone; the timeout is the hook's and
// sets the Job's deadline. The umbrella's checks (checkUninstallHook for each workload) check
// what each renders; here, which components have one.
func TestUninstallHookValues(t *testing.T) {
	tests := []struct {
		name, values string
		want         []string
	}{
		{name: "default", want: components},
		{name: "service mirror cleans up not", values: "serviceMirror: {uninstall: {cleanUp: false}}", want: []string{"policy", "wireguard"}},
		{name: "policy cleans up not", values: "policy: {uninstall: {cleanUp: false}}", want: []string{"service-mirror", "wireguard"}},
		{name: "wireguard cleans up not", values: "wireguard: {uninstall: {cleanUp: false}}", want: []string{"service-mirror", "policy"}},
		{name: "mirrors kept", values: "serviceMirror: {uninstall: {keepMirrors: true}}", want: []string{"policy", "wireguard"}},
		{name: "mirrors kept, MCS on", values: "serviceMirror: {mcs: {enabled: true}, uninstall: {keepMirrors: true}}", want: []string{"policy", "wireguard"}},
		{name: "longer timeouts", values: "serviceMirror: {uninstall: {timeout: 90s}}\npolicy: {uninstall: {timeout: 1h30m}}\nwireguard: {uninstall: {timeout: 2m3.5s}}", want: components},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := valuesOf(t, nil, validValues["semaphore"].values, tt.values)
			m := mustRender(t, umbrellaChart, vals)
			checkUmbrella(t, m, effectiveValues(t, umbrellaChart, vals))
			var got []string
			for _, w := range workloadsOf(t, m) {
				if m.Get("Job", hookName(w)) != nil {
					got = append(got, w.Component)
				}
			}
			if !cmp.Equal(got, tt.want, cmp.Transformer("sort", func(s []string) []string { return slices.Sorted(slices.Values(s)) })) {
				t.Errorf("uninstall hooks of %v, want %v", got, tt.want)
			}
			if jobs := len(m.Of("Job")); jobs != len(tt.want) {
				t.Errorf("%d Jobs rendered, want %d", jobs, len(tt.want))
			}
		})
	}
}

// With every selector of pods the charts have switched on (NetworkPolicies, metrics Services,
// PodMonitors, budgets), none selects an uninstall hook's pod (checkUninstallHookJob), while
// each component's pods are selected by its workload, budget (Deployments), NetworkPolicy
// (Deployments), metrics Service and PodMonitor.
func TestUninstallHookPodIsSelectedByNothing(t *testing.T) {
	on := "{networkPolicy: {enabled: true}, serviceMonitor: {enabled: true}, podMonitor: {enabled: true}}"
	vals := valuesOf(t, nil, validValues["semaphore"].values, fmt.Sprintf("serviceMirror: %s\npolicy: %s\nwireguard: {serviceMonitor: {enabled: true}, podMonitor: {enabled: true}}\n", on, on))
	m := mustRender(t, umbrellaChart, vals)
	checkUmbrella(t, m, effectiveValues(t, umbrellaChart, vals))
	selectors := podSelectors(t, m)
	for _, w := range workloadsOf(t, m) {
		want := map[string]int{"Deployment": 5, "DaemonSet": 3}[w.Kind]
		var got []string
		for what, sel := range selectors {
			if sel.Matches(labels.Set(w.Pod.Labels)) {
				got = append(got, what)
			}
		}
		if len(got) != want {
			t.Errorf("%s %s is selected by %v, want %d selectors (the test would prove nothing)", w.Kind, w.Name, got, want)
		}
	}
}

// In a real API server, the uninstall hook's identity can do what `uninstall-hook` does and no
// more: get its component's workload and patch its container's env, but not get or patch
// another's, list workloads or delete its own; and each component's own identity can delete its
// leader-election Lease (what uninstall mode deletes), and no other Lease. Helm makes the hook
// only on uninstall, which the tests do without hooks; here the hook's ServiceAccount, Role and
// RoleBinding are made from the render as Helm would make them.
func TestUninstallHookRights(t *testing.T) {
	_, gcp := clusters(t)
	ctx := context.Background()
	const name, namespace = "hook", "semaphore-hook"
	m := install(t, gcp, umbrellaChart, name, namespace, valuesOf(t, nil, validValues["semaphore"].values,
		"serviceMirror: {mirrorNamespace: {name: semaphore-hook-mirrors}}"))
	t.Cleanup(func() { uninstall(t, gcp, name, namespace) })
	dyn, mapper := clients(t, gcp)
	for _, o := range m.Objects {
		if !isHook(o) || o.GetKind() == "Job" {
			continue
		}
		r := resourceOf(t, dyn, mapper, o, namespace)
		if _, err := r.Create(ctx, o.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() { _ = r.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}) })
	}
	ws := workloadsOf(t, m)
	for _, w := range ws {
		t.Run(w.Component, func(t *testing.T) {
			hook := kubernetes.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, hookName(w), nil))
			checkHookCanPatch(t, hook, w, namespace)
			for _, other := range ws {
				if other.Name != w.Name {
					if err := workloadClient(hook, other, namespace).get(ctx); !apierrors.IsForbidden(err) {
						t.Errorf("the uninstall hook of %s may get %s %s: %v", w.Name, other.Kind, other.Name, err)
					}
				}
			}
			if _, err := hook.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("the uninstall hook of %s may list Deployments: %v", w.Name, err)
			}
			if err := workloadClient(hook, w, namespace).delete(ctx); !apierrors.IsForbidden(err) {
				t.Errorf("the uninstall hook of %s may delete it: %v", w.Name, err)
			}
			if w.Kind == "Deployment" {
				checkLeaseDelete(t, gcp.Client, kubernetes.NewForConfigOrDie(serviceAccountConfig(t, gcp, namespace, w.Pod.Spec.ServiceAccountName, nil)), w, namespace)
			}
		})
	}
}

// checkHookCanPatch gets w and patches its container's env as `uninstall-hook` does, as client.
func checkHookCanPatch(t *testing.T, client kubernetes.Interface, w workload, namespace string) {
	t.Helper()
	wc := workloadClient(client, w, namespace)
	if err := wc.get(context.Background()); err != nil {
		t.Errorf("the uninstall hook may not get %s %s: %v", w.Kind, w.Name, err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":"SEMAPHORE_UNINSTALL","value":"true"}]}]}}}}`, mainContainer(t, w).Name)
	if err := wc.patch(context.Background(), []byte(patch)); err != nil {
		t.Errorf("the uninstall hook may not patch %s %s: %v", w.Kind, w.Name, err)
	}
}

// checkLeaseDelete checks that the component's identity (sa) may delete its own Lease (named
// after the workload) and not another, which admin makes.
func checkLeaseDelete(t *testing.T, admin, sa kubernetes.Interface, w workload, namespace string) {
	t.Helper()
	ctx := context.Background()
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	}
	if _, err := sa.CoordinationV1().Leases(namespace).Create(ctx, lease(w.Name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s may not create its Lease: %v", w.Name, err)
	}
	if err := sa.CoordinationV1().Leases(namespace).Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("%s may not delete its Lease: %v", w.Name, err)
	}
	other := w.Name + "-other"
	if _, err := admin.CoordinationV1().Leases(namespace).Create(ctx, lease(other), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoordinationV1().Leases(namespace).Delete(context.Background(), other, metav1.DeleteOptions{})
	})
	if err := sa.CoordinationV1().Leases(namespace).Delete(ctx, other, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("%s may delete Lease %s: %v", w.Name, other, err)
	}
}

// workloadOps are the requests made of one workload, whichever its kind.
type workloadOps struct {
	get    func(context.Context) error
	patch  func(context.Context, []byte) error
	delete func(context.Context) error
}

// workloadClient is client's requests of w in namespace.
func workloadClient(client kubernetes.Interface, w workload, namespace string) workloadOps {
	if w.Kind == "DaemonSet" {
		return opsOf(client.AppsV1().DaemonSets(namespace), w.Name)
	}
	return opsOf(client.AppsV1().Deployments(namespace), w.Name)
}

// namedClient is what a typed client of workloads of type T has in common with the others.
type namedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// opsOf is c's requests of the object name.
func opsOf[T any](c namedClient[T], name string) workloadOps {
	return workloadOps{
		get: func(ctx context.Context) error {
			_, err := c.Get(ctx, name, metav1.GetOptions{})
			return err
		},
		patch: func(ctx context.Context, p []byte) error {
			_, err := c.Patch(ctx, name, types.StrategicMergePatchType, p, metav1.PatchOptions{})
			return err
		},
		delete: func(ctx context.Context) error { return c.Delete(ctx, name, metav1.DeleteOptions{}) },
	}
}
