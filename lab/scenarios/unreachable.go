package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
	"github.com/kube-semaphore/semaphore/lab/status"
)

const (
	// unreachableSettle bounds each wait of the scenario: a rollout, the check naming the
	// peers.
	unreachableSettle = 2 * time.Minute
	// reopenSettle bounds the wait for the mesh to be whole again after the rollback: merit's
	// nodes, behind source NAT, open their tunnels to the new devices of aws and gcp only at
	// their next rekey, WireGuard's REJECT_AFTER_TIME (3 minutes) after their last handshake
	// at most.
	reopenSettle = 4 * time.Minute
)

// checkUnreachablePeers sets aws's and gcp's semaphore-wireguard to publish to each other their
// InternalIPs only (wireguard.endpointAddressTypes per remote), private addresses the other
// provider cannot reach (for a cluster reached through its gateways, whose gateway nodes
// publish their load balancer's address, that annotation is removed meanwhile, as if it had been
// forgotten), starts their agents afresh (new devices: no session to keep), and
// expects `kubectl semaphore check` in each to name the other's nodes as peers it cannot reach
// at their published endpoints, while merit's tunnels stay up; then it rolls the releases back
// and waits for the mesh to be whole again.
func checkUnreachablePeers(ctx context.Context, l *env.Lab) []string {
	if !l.NodesRun() {
		return nil
	}
	pair := [2]string{"aws", "gcp"}
	fmt.Fprintf(l.Out(), "Unreachable peers (%s and %s publish to each other their InternalIPs only)\n", pair[0], pair[1])
	for i, cluster := range pair {
		other := pair[1-i]
		set := "wireguard.endpointAddressTypes=" + other + ":InternalIP\\,ExternalIP\\,InternalIP"
		if err := l.UpgradeUmbrella(ctx, cluster, set); err != nil {
			return []string{err.Error()}
		}
	}
	restore, err := withoutEndpointOverrides(ctx, l, pair[:])
	if err != nil {
		return []string{err.Error()}
	}
	problems := restartAgents(ctx, l, pair[:])
	if len(problems) == 0 {
		problems = expectUnreachable(ctx, l, pair)
	}
	if err := restore(ctx); err != nil {
		problems = append(problems, err.Error())
	}
	for _, cluster := range pair {
		if err := l.RollbackUmbrella(ctx, cluster); err != nil {
			problems = append(problems, err.Error())
		}
	}
	problems = append(problems, restartAgents(ctx, l, pair[:])...)
	began := time.Now()
	if _, p := status.WaitReady(ctx, l.Record(), reopenSettle, l.Exited()); len(p) > 0 {
		problems = append(problems, "after the rollback: "+strings.Join(p, "; "))
	} else {
		fmt.Fprintf(l.Out(), "  rolled back: every tunnel up again %s after the agents restarted\n", time.Since(began).Round(time.Second))
	}
	return problems
}

// restartAgents waits for the rollout of semaphore-wireguard in each of clusters, then deletes
// its pods there, all at once, and waits for their successors to be ready: every device starts
// afresh, with the endpoints its peers publish now. It records the new pods, and points
// Prometheus at them.
func restartAgents(ctx context.Context, l *env.Lab, clusters []string) []string {
	for _, cluster := range clusters {
		if p := waitRollout(ctx, l, cluster); p != "" {
			return []string{p}
		}
	}
	old := map[string][]string{}
	for _, cluster := range clusters {
		uids, err := agentPods(ctx, l, cluster)
		if err != nil {
			return []string{err.Error()}
		}
		old[cluster] = uids
		pods := l.Cluster(cluster).Client.CoreV1().Pods(layout.SemaphoreNamespace)
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: agentSelector}); err != nil {
			return []string{fmt.Sprintf("%s: deleting the semaphore-wireguard pods: %v", cluster, err)}
		}
	}
	for _, cluster := range clusters {
		err := wait.PollUntilContextTimeout(ctx, time.Second, unreachableSettle, true, func(ctx context.Context) (bool, error) {
			uids, err := agentPods(ctx, l, cluster)
			return err == nil && len(uids) == layout.NodesPerCluster && !slices.ContainsFunc(uids, func(u string) bool { return slices.Contains(old[cluster], u) }), nil
		})
		if err != nil {
			return []string{fmt.Sprintf("%s: the semaphore-wireguard pods were not all replaced and ready in %s", cluster, unreachableSettle)}
		}
	}
	if err := l.RecordPods(ctx); err != nil {
		return []string{err.Error()}
	}
	if err := l.ReloadPrometheus(ctx); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// agentSelector selects semaphore-wireguard's pods.
const agentSelector = "app.kubernetes.io/name=" + layout.WireGuardComponent

// agentPods are the UIDs of cluster's semaphore-wireguard pods that run and are ready, not
// being deleted.
func agentPods(ctx context.Context, l *env.Lab, cluster string) ([]string, error) {
	list, err := l.Cluster(cluster).Client.CoreV1().Pods(layout.SemaphoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: agentSelector})
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && observe.PodReady(&p) {
			uids = append(uids, string(p.UID))
		}
	}
	return uids, nil
}

// waitRollout waits until cluster's semaphore-wireguard DaemonSet has rolled out, and says
// what it waits for when it does not in time.
func waitRollout(ctx context.Context, l *env.Lab, cluster string) string {
	var last string
	for start := time.Now(); time.Since(start) < unreachableSettle; time.Sleep(time.Second) {
		if last = observe.WorkloadPending(ctx, l.Cluster(cluster).Client, layout.WireGuardComponent); last == "" {
			return ""
		}
	}
	return fmt.Sprintf("%s: semaphore-wireguard did not roll out in %s: %s", cluster, unreachableSettle, last)
}

// expectUnreachable runs kubectl semaphore check in both clusters of pair until each names
// every node of the other as unreachable at its published endpoint, and nothing else fails but
// the handshakes with merit, whose nodes open their tunnels again only at their next rekey (up
// to 3 minutes) once the other side's devices are new; it prints what each check said.
func expectUnreachable(ctx context.Context, l *env.Lab, pair [2]string) []string {
	var last []string
	for start := time.Now(); time.Since(start) < unreachableSettle; time.Sleep(2 * time.Second) {
		last = nil
		var said []string
		for i, cluster := range pair {
			results, _, err := l.PluginCheck(ctx, cluster, false)
			if err != nil {
				return []string{err.Error()}
			}
			peers, err := expectedPeers(ctx, l, cluster, pair[1-i])
			if err != nil {
				return []string{err.Error()}
			}
			if p := namesUnreachable(results, cluster, pair[1-i], peers); p != "" {
				last = append(last, p)
			}
			said = append(said, fmt.Sprintf("  kubectl semaphore check --context %s: %s", cluster, handshakeFailure(results, pair[1-i])))
		}
		if len(last) == 0 {
			fmt.Fprintln(l.Out(), strings.Join(said, "\n"))
			return nil
		}
	}
	return last
}

// expectedPeers are the nodes of remote that cluster's agents peer with: every one, or, when
// remote is reached through its gateways, its active gateway toward cluster.
func expectedPeers(ctx context.Context, l *env.Lab, cluster, remote string) ([]string, error) {
	if layout.SpecOf(remote).Gateways {
		gw, err := status.ActiveGateway(ctx, l.Record(), remote, cluster)
		if err != nil {
			return nil, err
		}
		return []string{gw}, nil
	}
	var out []string
	for i := range layout.NodesPerCluster {
		out = append(out, layout.NodeName(remote, i))
	}
	return out, nil
}

// withoutEndpointOverrides removes the endpoint override annotation from the nodes of every
// cluster of clusters reached through its gateways, and returns what puts their load
// balancer's address back.
func withoutEndpointOverrides(ctx context.Context, l *env.Lab, clusters []string) (restore func(context.Context) error, err error) {
	restore = func(ctx context.Context) error {
		return setEndpointOverrides(ctx, l, clusters, func(spec layout.ClusterSpec) string { return strconv.Quote(spec.Network.LoadBalancerAddr) })
	}
	if err := setEndpointOverrides(ctx, l, clusters, func(layout.ClusterSpec) string { return "null" }); err != nil {
		// Some nodes may have lost theirs already: put them back.
		return nil, errors.Join(err, restore(ctx))
	}
	return restore, nil
}

// setEndpointOverrides sets the endpoint override annotation of the nodes of every cluster of
// clusters reached through its gateways to the JSON value value gives (null removes it).
func setEndpointOverrides(ctx context.Context, l *env.Lab, clusters []string, value func(layout.ClusterSpec) string) error {
	for _, cluster := range clusters {
		spec := layout.SpecOf(cluster)
		if !spec.Gateways {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, endpoint.OverrideAnnotation, value(spec))
		for i := range layout.NodesPerCluster {
			node := layout.NodeName(cluster, i)
			if _, err := l.Cluster(cluster).Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("%s: %s's %s: %w", cluster, node, endpoint.OverrideAnnotation, err)
			}
		}
	}
	return nil
}

// namesUnreachable says how the results of cluster's check differ from what they must be with
// remote's nodes unreachable: the handshakes with remote failing, naming each of peers (the
// remote's nodes it peers with) and its published endpoint; no other check failing but
// handshakes.
func namesUnreachable(results []env.PluginResult, cluster, remote string, peers []string) string {
	failure := handshakeFailure(results, remote)
	if failure == "" {
		return fmt.Sprintf("%s: the handshakes with %s do not fail yet", cluster, remote)
	}
	for _, node := range peers {
		if !strings.Contains(failure, node) {
			return fmt.Sprintf("%s: the handshakes check does not name %s: %s", cluster, node, failure)
		}
	}
	if !strings.Contains(failure, "endpoint published") {
		return fmt.Sprintf("%s: the handshakes check does not say the published endpoint is unreachable: %s", cluster, failure)
	}
	for _, f := range env.FailedChecks(results) {
		if !strings.HasPrefix(f, "handshakes ") {
			return fmt.Sprintf("%s: another check fails: %s", cluster, f)
		}
	}
	return ""
}

// handshakeFailure is the message of the failed handshakes check for remote, "" when it passed.
func handshakeFailure(results []env.PluginResult, remote string) string {
	for _, r := range results {
		if r.Check == "handshakes" && r.Remote == remote && !r.OK {
			return r.Message
		}
	}
	return ""
}
