package check

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// checkWorkload checks that the component's workload has rolled out and every pod of it is
// ready: pods, or listErr when they could not be listed.
func checkWorkload(ctx context.Context, client kubernetes.Interface, c release.Component, pods []corev1.Pod, listErr error) []Result {
	r := Result{Check: Pods, Cluster: c.LocalCluster(), Component: c.Name}
	what := c.WorkloadRef()
	if msg, err := c.Rollout(ctx, client); err != nil {
		return []Result{fail(r, "check-pods", "%s: %v", what, err)}
	} else if msg != "" {
		return []Result{fail(r, "check-pods", "%s has not rolled out: %s; see kubectl -n %s rollout status %s/%s",
			what, msg, c.Namespace, strings.ToLower(c.Kind), c.Workload)}
	}
	if listErr != nil {
		return []Result{fail(r, "check-pods", "listing the pods of %s: %v", what, listErr)}
	}
	if len(pods) == 0 {
		return []Result{fail(r, "check-pods", "%s has no pods: see kubectl -n %s describe %s/%s", what, c.Namespace, strings.ToLower(c.Kind), c.Workload)}
	}
	var notReady []string
	for i := range pods {
		if why := release.PodNotReady(&pods[i]); why != "" {
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
