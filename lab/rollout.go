package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// rolloutTimeout bounds each rollout during the outage: a pod is replaced in seconds here, so
// a stall (a new pod that never turns ready) shows well within it.
const rolloutTimeout = 2 * time.Minute

// checkRolloutDuringOutage restarts gcp's semaphore-wireguard DaemonSet and service-mirror
// Deployment, as `kubectl rollout restart` does, while gcp cannot read aws (its token there is
// revoked), and expects both rollouts to complete: readiness is local, so a remote outage must
// not stall a rollout (a DaemonSet with maxUnavailable 1 would wait for ever on an unready pod).
func (l *lab) checkRolloutDuringOutage(ctx context.Context) []string {
	c := l.clusters["gcp"].Client
	restartedAt := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, restartedAt)
	ds, deploy := wireguardComponent, "semaphore-service-mirror"
	if _, err := c.AppsV1().DaemonSets(semaphoreNamespace).Patch(ctx, ds, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return []string{fmt.Sprintf("restarting DaemonSet %s in gcp: %v", ds, err)}
	}
	if _, err := c.AppsV1().Deployments(semaphoreNamespace).Patch(ctx, deploy, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return []string{fmt.Sprintf("restarting Deployment %s in gcp: %v", deploy, err)}
	}
	start := time.Now()
	var last string
	for time.Since(start) < rolloutTimeout {
		last = rolloutPending(ctx, c, ds, deploy)
		if last == "" {
			fmt.Fprintf(l.out, "  gcp    DaemonSet %s and Deployment %s rolled out in %s while aws is unreadable from gcp\n",
				ds, deploy, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		time.Sleep(time.Second)
	}
	return []string{fmt.Sprintf("rollout in gcp while aws is unreadable from gcp did not complete in %s: %s", rolloutTimeout, last)}
}

// rolloutPending says what keeps the rollouts of ds and deploy from being complete, "" when
// they are: every pod updated, available and ready, as `kubectl rollout status` waits for.
func rolloutPending(ctx context.Context, c kubernetes.Interface, ds, deploy string) string {
	d, err := c.AppsV1().DaemonSets(semaphoreNamespace).Get(ctx, ds, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if msg := daemonSetPending(d); msg != "" {
		return msg
	}
	dep, err := c.AppsV1().Deployments(semaphoreNamespace).Get(ctx, deploy, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return deploymentPending(dep)
}

func daemonSetPending(d *appsv1.DaemonSet) string {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedNumberScheduled != s.DesiredNumberScheduled ||
		s.NumberReady != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled {
		return fmt.Sprintf("DaemonSet %s: %d desired, %d updated, %d ready, %d available", d.Name,
			s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable)
	}
	return ""
}

func deploymentPending(d *appsv1.Deployment) string {
	s := d.Status
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want ||
		s.ReadyReplicas != want || s.AvailableReplicas != want {
		return fmt.Sprintf("Deployment %s: %d wanted, %d updated, %d in all, %d ready, %d available", d.Name,
			want, s.UpdatedReplicas, s.Replicas, s.ReadyReplicas, s.AvailableReplicas)
	}
	return ""
}
