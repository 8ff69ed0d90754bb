package env

import (
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// A record holds one agent per node: two pods of a DaemonSet on a node (a surged rollout not yet
// complete) are refused with both named, while one per node, and controllers of Deployments
// (no node), pass.
func TestOneAgentPerNodeRefusesASurgedRolloutInProgress(t *testing.T) {
	agent := func(cluster, node, pod string) layout.Controller {
		return layout.Controller{Component: layout.WireGuardComponent, Cluster: cluster, Node: node, PodName: pod}
	}
	mirror := func(pod string) layout.Controller {
		return layout.Controller{Component: "semaphore-service-mirror", Cluster: "gcp", PodName: pod}
	}
	settled := []layout.Controller{agent("aws", "node-1", "wg-a"), agent("gcp", "node-1", "wg-b"), agent("gcp", "node-2", "wg-c"), mirror("m-1"), mirror("m-2")}
	if err := oneAgentPerNode(settled); err != nil {
		t.Errorf("one agent per node: %v", err)
	}
	surging := append(settled, agent("gcp", "node-2", "wg-d"))
	err := oneAgentPerNode(surging)
	if err == nil || !strings.Contains(err.Error(), "node-2") || !strings.Contains(err.Error(), "wg-c and wg-d") {
		t.Errorf("two agents on gcp's node-2: %v, want an error naming the node and both pods", err)
	}
}
