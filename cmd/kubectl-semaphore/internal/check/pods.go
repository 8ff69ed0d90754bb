package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// checkWorkload checks that the component's workload has rolled out and every pod of it is
// ready.
func checkWorkload(ctx context.Context, client kubernetes.Interface, c release.Component) []Result {
	r := Result{Check: Pods, Cluster: c.LocalCluster(), Component: c.Name}
	what := fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Workload)
	if msg, err := rollout(ctx, client, c); err != nil {
		return []Result{fail(r, "check-pods", "%s: %v", what, err)}
	} else if msg != "" {
		return []Result{fail(r, "check-pods", "%s has not rolled out: %s; see kubectl -n %s rollout status %s/%s",
			what, msg, c.Namespace, strings.ToLower(c.Kind), c.Workload)}
	}
	pods, err := c.Pods(ctx, client)
	if err != nil {
		return []Result{fail(r, "check-pods", "listing the pods of %s: %v", what, err)}
	}
	if len(pods) == 0 {
		return []Result{fail(r, "check-pods", "%s has no pods: see kubectl -n %s describe %s/%s", what, c.Namespace, strings.ToLower(c.Kind), c.Workload)}
	}
	var notReady []string
	for i := range pods {
		if why := podNotReady(&pods[i]); why != "" {
			notReady = append(notReady, pods[i].Name+" ("+why+")")
		}
	}
	if len(notReady) > 0 {
		slices.Sort(notReady)
		return []Result{fail(r, "check-pods", "%s: %d of %d pods not ready: %s; see kubectl -n %s describe pod and logs of them",
			what, len(notReady), len(pods), strings.Join(notReady, ", "), c.Namespace)}
	}
	return []Result{pass(r, "%s: %d pods ready", what, len(pods))}
}

// rollout says what is missing for the workload to have rolled out ("" when it has).
func rollout(ctx context.Context, client kubernetes.Interface, c release.Component) (string, error) {
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

// podNotReady says why a pod is not ready ("" when it is).
func podNotReady(p *corev1.Pod) string {
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
