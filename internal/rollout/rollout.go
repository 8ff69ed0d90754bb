// Package rollout tells whether a Deployment's or DaemonSet's rollout is complete, by the rules
// `kubectl rollout status` waits for: every pod of the current template, ready and available,
// and none of an older one. The uninstall hook and the lab wait by them.
package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// DaemonSetPending says what keeps d's rollout from being complete, "" when it is: every pod
// updated, ready and available.
func DaemonSetPending(d *appsv1.DaemonSet) string {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedNumberScheduled != s.DesiredNumberScheduled ||
		s.NumberReady != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled {
		return fmt.Sprintf("DaemonSet %s: %d desired, %d updated, %d ready, %d available", d.Name,
			s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable)
	}
	return ""
}

// DeploymentPending says what keeps d's rollout from being complete, "" when it is: every pod
// updated, ready and available, and no other.
func DeploymentPending(d *appsv1.Deployment) string {
	s := d.Status
	want := ptr.Deref(d.Spec.Replicas, 1)
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want ||
		s.ReadyReplicas != want || s.AvailableReplicas != want {
		return fmt.Sprintf("Deployment %s: %d wanted, %d updated, %d in all, %d ready, %d available", d.Name,
			want, s.UpdatedReplicas, s.Replicas, s.ReadyReplicas, s.AvailableReplicas)
	}
	return ""
}
