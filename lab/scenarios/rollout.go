package scenarios

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
)

// rolloutTimeout bounds each rollout during the outage: a pod is replaced in seconds here, so
// a stall (a new pod that never turns ready) shows well within it.
const rolloutTimeout = 2 * time.Minute

// checkRolloutDuringOutage restarts gcp's semaphore-wireguard DaemonSet and service-mirror
// Deployment, as `kubectl rollout restart` does, while gcp cannot read aws (its token there is
// revoked), and expects both rollouts to complete: readiness is local, so a remote outage must
// not stall a rollout (a DaemonSet waits for ever on a successor that never turns ready).
func checkRolloutDuringOutage(ctx context.Context, l *env.Lab) []string {
	c := l.Cluster("gcp").Client
	restartedAt := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, restartedAt)
	ds, deploy := layout.WireGuardComponent, "semaphore-service-mirror"
	if _, err := c.AppsV1().DaemonSets(layout.SemaphoreNamespace).Patch(ctx, ds, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return []string{fmt.Sprintf("restarting DaemonSet %s in gcp: %v", ds, err)}
	}
	if _, err := c.AppsV1().Deployments(layout.SemaphoreNamespace).Patch(ctx, deploy, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return []string{fmt.Sprintf("restarting Deployment %s in gcp: %v", deploy, err)}
	}
	start := time.Now()
	var last string
	for time.Since(start) < rolloutTimeout {
		last = observe.WorkloadPending(ctx, c, ds)
		if last == "" {
			last = observe.WorkloadPending(ctx, c, deploy)
		}
		if last == "" {
			fmt.Fprintf(l.Out(), "  gcp    DaemonSet %s and Deployment %s rolled out in %s while aws is unreadable from gcp\n",
				ds, deploy, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		time.Sleep(time.Second)
	}
	return []string{fmt.Sprintf("rollout in gcp while aws is unreadable from gcp did not complete in %s: %s", rolloutTimeout, last)}
}
