package observe

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kube-semaphore/semaphore/internal/rollout"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// ScaleDeployment sets the replicas of Deployment namespace/name.
func ScaleDeployment(ctx context.Context, client kubernetes.Interface, namespace, name string, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	_, err := client.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// SleepUntil sleeps until t, or until ctx is done.
func SleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// PodsOrNone are the pods of list, none when it could not be read.
func PodsOrNone(list *corev1.PodList, err error) []corev1.Pod {
	if err != nil || list == nil {
		return nil
	}
	return list.Items
}

// PodReady tells whether pod is ready.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WorkloadPending says what keeps the rollout of component's workload from being complete ("" when
// it is), as `kubectl rollout status` waits for: a DaemonSet for semaphore-wireguard, a
// Deployment for the others.
func WorkloadPending(ctx context.Context, client kubernetes.Interface, component string) string {
	if component == layout.WireGuardComponent {
		d, err := client.AppsV1().DaemonSets(layout.SemaphoreNamespace).Get(ctx, component, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return rollout.DaemonSetPending(d)
	}
	d, err := client.AppsV1().Deployments(layout.SemaphoreNamespace).Get(ctx, component, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return rollout.DeploymentPending(d)
}

// PodSettle bounds the waits for a pod to run or to go: scheduled, its image pulled, its
// address assigned (by calico-ipam in the Calico cluster), or its containers stopped.
const PodSettle = 2 * time.Minute

// newPodPoll is how often WaitNewPod lists the pods: a new pod is often what a scenario times.
const newPodPoll = 100 * time.Millisecond

// WaitNewPod waits for a pod of app that known does not hold, with an address, for which ok
// holds (it runs, it is ready).
func WaitNewPod(ctx context.Context, pods typedcorev1.PodInterface, app string, known []layout.Pod, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var found *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, newPodPoll, PodSettle, true, func(ctx context.Context) (bool, error) {
		// An error (the API server busy) is asked again, like pods not running yet.
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + app})
		for _, pod := range PodsOrNone(list, err) {
			recorded := slices.ContainsFunc(known, func(p layout.Pod) bool { return p.UID == string(pod.UID) })
			if !recorded && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" && ok(&pod) {
				found = &pod
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no new %s pod within %s of the scale-up", app, PodSettle)
	}
	return found, nil
}

// PodRunning tells whether pod runs.
func PodRunning(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning }

// WaitGone waits until pod name is gone, and returns when it saw it gone.
func WaitGone(ctx context.Context, pods typedcorev1.PodInterface, name string) (time.Time, error) {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, PodSettle, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("pod %s is not gone within %s", name, PodSettle)
	}
	return time.Now(), nil
}
