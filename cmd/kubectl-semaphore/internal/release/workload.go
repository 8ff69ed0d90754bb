package release

// The state of a component's workload: whether it has rolled out, and its pods.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Rollout says what is missing for the component's workload to have rolled out ("" when it
// has).
func (c Component) Rollout(ctx context.Context, client kubernetes.Interface) (string, error) {
	switch c.Kind {
	case "Deployment":
		d, err := client.AppsV1().Deployments(c.Namespace).Get(ctx, c.Workload, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		want, s := ptr.Deref(d.Spec.Replicas, 1), d.Status
		switch {
		case s.ObservedGeneration < d.Generation:
			return "its controller has not seen the latest spec yet", nil
		case s.UpdatedReplicas < want:
			return fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want), nil
		case s.Replicas > s.UpdatedReplicas:
			return fmt.Sprintf("%d old replicas remain", s.Replicas-s.UpdatedReplicas), nil
		case s.AvailableReplicas < want:
			return fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, want), nil
		}
	case "DaemonSet":
		d, err := client.AppsV1().DaemonSets(c.Namespace).Get(ctx, c.Workload, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		s := d.Status
		switch {
		case s.ObservedGeneration < d.Generation:
			return "its controller has not seen the latest spec yet", nil
		case s.DesiredNumberScheduled == 0:
			return "no node runs it (node selector, tolerations)", nil
		case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
			return fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled), nil
		case s.NumberAvailable < s.DesiredNumberScheduled:
			return fmt.Sprintf("%d of %d pods available", s.NumberAvailable, s.DesiredNumberScheduled), nil
		}
	}
	return "", nil
}

// PodNotReady says why a pod is not ready ("" when it is).
func PodNotReady(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			if cond.Status == corev1.ConditionTrue {
				return ""
			}
			if cond.Message != "" {
				return cond.Message
			}
			break
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		return "not running: phase " + string(p.Status.Phase)
	}
	return "readiness probe failing (/readyz names the failing check)"
}

// Pods are the component's pods.
func (c Component) Pods(ctx context.Context, client kubernetes.Interface) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: c.selector.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
