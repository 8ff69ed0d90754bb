package uninstall_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// labels select the test workloads' pods.
var labels = map[string]string{"app": "semaphore-test"}

// podTemplate has the component's container and a sidecar the hook must leave alone.
func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "component", Image: "component:1", Env: []corev1.EnvVar{{Name: "SEMAPHORE_LOCAL_CLUSTER", Value: "gcp"}}},
			{Name: "sidecar", Image: "sidecar:1"},
		}},
	}
}

// hook is a Hook of the workload kind/name in namespace default of c.
func hook(t *testing.T, c kubernetes.Interface, kind, name string, timeout time.Duration) uninstall.Hook {
	return uninstall.Hook{
		Client: c, Kind: kind, Namespace: "default", Name: name, Container: "component",
		Timeout: timeout, Poll: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil)),
	}
}

// envOf is the variable name of container in tpl ("" if absent).
func envOf(tpl corev1.PodTemplateSpec, container, name string) string {
	for _, c := range tpl.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

// The hook switches only the component's container of a Deployment into the uninstall mode,
// makes the Deployment recreate its pods (no pod of the normal mode beside one of the
// uninstall mode), keeps the container's other variables, and returns once the rollout is
// complete; while it is not, it waits.
func TestHookSwitchesADeploymentAndWaitsForItsRollout(t *testing.T) {
	c := testenv.Start(t, testenv.Options{}, "local")[0].Client
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(),
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- hook(t, c, uninstall.Deployment, "mirror", 30*time.Second).Run(ctx) }()

	var got *appsv1.Deployment
	testenv.Eventually(t, 10*time.Second, "the Deployment switched", func() error {
		var err error
		if got, err = c.AppsV1().Deployments("default").Get(ctx, "mirror", metav1.GetOptions{}); err == nil && got.Generation < 2 {
			err = errNotSwitched
		}
		return err
	})
	if v := envOf(got.Spec.Template, "component", uninstall.ModeEnv); v != "true" {
		t.Errorf("%s of the component's container = %q, want true", uninstall.ModeEnv, v)
	}
	if v := envOf(got.Spec.Template, "component", "SEMAPHORE_LOCAL_CLUSTER"); v != "gcp" {
		t.Errorf("the component's other variables changed: SEMAPHORE_LOCAL_CLUSTER = %q", v)
	}
	if v := envOf(got.Spec.Template, "sidecar", uninstall.ModeEnv); v != "" {
		t.Errorf("the sidecar switched too: %q", v)
	}
	if got.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %s, want Recreate", got.Spec.Strategy.Type)
	}

	// No controller runs here: the test plays the Deployment controller's part.
	got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if got, err := c.AppsV1().Deployments("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	} else {
		select {
		case err := <-done:
			t.Fatalf("the hook returned (%v) while a pod of the normal mode was left", err)
		case <-time.After(500 * time.Millisecond):
		}
		got.Status.Replicas = 2
		if _, err := c.AppsV1().Deployments("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the hook: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hook did not return once the rollout was complete")
	}
}

// On a DaemonSet whose pods do not all come back within the timeout (a node whose pod cannot
// start), the hook fails with a message that says what is left and how to go on; the
// DaemonSet, surged as the chart makes it, is switched to replace every node's pod at once,
// with no surge (the API server takes one of the two) and each pod available once ready.
func TestHookFailsWhenADaemonSetsPodsDoNotAllComeBack(t *testing.T) {
	c := testenv.Start(t, testenv.Options{}, "local")[0].Client
	ctx := context.Background()
	surge, none := intstr.FromInt32(1), intstr.FromInt32(0)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "wireguard", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(), MinReadySeconds: 5,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &surge, MaxUnavailable: &none},
			},
		},
	}
	ds, err := c.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 2, NumberAvailable: 2, CurrentNumberScheduled: 3}
	if _, err := c.AppsV1().DaemonSets("default").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = hook(t, c, uninstall.DaemonSet, "wireguard", 2*time.Second).Run(ctx)
	if err == nil {
		t.Fatal("the hook succeeded with one node's pod not available")
	}
	for _, want := range []string{"daemonset default/wireguard", "DaemonSet wireguard: 3 desired, 3 updated, 2 ready, 2 available", "--no-hooks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	got, err := c.AppsV1().DaemonSets("default").Get(ctx, "wireguard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Spec.UpdateStrategy.RollingUpdate; u == nil || u.MaxUnavailable == nil || u.MaxUnavailable.String() != "100%" || u.MaxSurge == nil || u.MaxSurge.String() != "0" {
		t.Errorf("updateStrategy %+v, want maxUnavailable 100%% and maxSurge 0", got.Spec.UpdateStrategy)
	}
	if got.Spec.MinReadySeconds != 0 {
		t.Errorf("minReadySeconds %d, want 0", got.Spec.MinReadySeconds)
	}
	if v := envOf(got.Spec.Template, "component", uninstall.ModeEnv); v != "true" {
		t.Errorf("%s = %q, want true", uninstall.ModeEnv, v)
	}
}

// Each bad hook setting is refused naming its variable.
func TestHookFromEnvNamesTheBadVariable(t *testing.T) {
	good := map[string]string{
		"SEMAPHORE_UNINSTALL_WORKLOAD":  "daemonset/semaphore-wireguard",
		"SEMAPHORE_UNINSTALL_NAMESPACE": "semaphore",
		"SEMAPHORE_UNINSTALL_CONTAINER": "wireguard",
		"SEMAPHORE_UNINSTALL_TIMEOUT":   "5m",
	}
	h, err := uninstall.HookFromEnv(func(k string) string { return good[k] })
	if err != nil || h.Kind != uninstall.DaemonSet || h.Name != "semaphore-wireguard" || h.Timeout != 5*time.Minute {
		t.Fatalf("HookFromEnv(good) = %+v, %v", h, err)
	}
	for variable, bad := range map[string]string{
		"SEMAPHORE_UNINSTALL_WORKLOAD":  "statefulset/x",
		"SEMAPHORE_UNINSTALL_NAMESPACE": "",
		"SEMAPHORE_UNINSTALL_CONTAINER": "",
		"SEMAPHORE_UNINSTALL_TIMEOUT":   "soon",
	} {
		_, err := uninstall.HookFromEnv(func(k string) string {
			if k == variable {
				return bad
			}
			return good[k]
		})
		if err == nil || !strings.HasPrefix(err.Error(), variable+":") {
			t.Errorf("with %s=%q: error %v, want one naming it", variable, bad, err)
		}
	}
}

// errNotSwitched says the workload has not been patched yet.
var errNotSwitched = errorString("the workload not switched yet")

type errorString string

func (e errorString) Error() string { return string(e) }
