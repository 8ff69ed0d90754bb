package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

const (
	// failoverBound is the longest a tunnel through a cluster's gateway may be down when its
	// active gateway is lost, the remote's switch to the new one included.
	failoverBound = 10 * time.Second
	// failoverObserve is how long the tunnel probe goes on after a loss: past the bound, so that
	// a gap longer than it is seen whole.
	failoverObserve = 15 * time.Second
	// serviceAccountDir is in the agent container's root, not in its pod's sandbox's.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// gatewayLoss is one way of losing the active gateway: what is done to its node, and what
// undoes it once the tunnels are measured (nil: nothing to undo).
type gatewayLoss struct {
	what string
	do   func(ctx context.Context, l *env.Lab, node layout.Node) (undo func() error, err error)
}

// checkGatewayFailover loses the active gateway of the cluster reached through gateways twice,
// its agent killed (SIGKILL: the Lease is not released), then its node cut off its network,
// while a tunnel probe pings across every tunnel: each tunnel of that cluster must be down for
// no longer than failoverBound. It prints which node is the gateway after each loss, how long
// the election took and each tunnel's longest gap, and waits for the mesh to be whole again.
func checkGatewayFailover(ctx context.Context, l *env.Lab) []string {
	i := slices.IndexFunc(layout.ClusterSpecs, func(c layout.ClusterSpec) bool { return c.Gateways })
	if !l.NodesRun() || i < 0 {
		return nil
	}
	cluster := layout.ClusterSpecs[i].Name
	fmt.Fprintf(l.Out(), "Gateway failover (%s's active gateway lost, with a tunnel probe across every tunnel)\n", cluster)
	var problems []string
	for _, loss := range []gatewayLoss{{"its agent killed", killAgent}, {"its node cut off its network", cutNode}} {
		problems = append(problems, loseGateway(ctx, l, cluster, loss)...)
		if len(problems) > 0 {
			return problems
		}
	}
	return nil
}

// loseGateway loses cluster's active gateway in the way loss says and measures the tunnels.
func loseGateway(ctx context.Context, l *env.Lab, cluster string, loss gatewayLoss) []string {
	rec := l.Record()
	remotes := layout.RemotesOf(cluster)
	before, err := activeGateways(ctx, rec, cluster, remotes)
	if err != nil {
		return []string{err.Error()}
	}
	node, ok := nodeNamed(rec, before[remotes[0]])
	if !ok {
		return []string{fmt.Sprintf("%s's active gateway %q is no node of the lab", cluster, before[remotes[0]])}
	}
	probe, skipped := startTunnelProbe(rec)
	if len(probe.pairs) == 0 {
		return append([]string{"no two workload pods of different clusters answer a ping:"}, skipped...)
	}
	time.Sleep(time.Second)
	lost := time.Now()
	undo, err := loss.do(ctx, l, node)
	if err != nil {
		probe.finish()
		return []string{fmt.Sprintf("%s (%s): %v", node.Name, loss.what, err)}
	}
	after, elected := waitGateways(ctx, rec, cluster, remotes, before, failoverObserve)
	time.Sleep(time.Until(lost.Add(failoverObserve)))
	gaps := probe.finish()
	if undo != nil {
		if err := undo(); err != nil {
			return []string{fmt.Sprintf("%s: undoing %s: %v", node.Name, loss.what, err)}
		}
	}
	fmt.Fprintf(l.Out(), "  %s, %s: the gateway now %s%s\n", node.Name, loss.what, describeGateways(after), elected)
	problems := failoverGaps(l, cluster, node.Name, gaps)
	if p := settleAfterFailover(ctx, l); len(p) > 0 {
		problems = append(problems, p...)
	}
	return problems
}

// killAgent kills the agent on node with SIGKILL, as a crash or the OOM killer would: it
// releases nothing. The kubelet starts it again.
func killAgent(_ context.Context, l *env.Lab, node layout.Node) (func() error, error) {
	rec := l.Record()
	i := slices.IndexFunc(rec.Controllers, func(c layout.Controller) bool {
		return c.Component == layout.WireGuardComponent && c.Node == node.Name
	})
	if i < 0 {
		return nil, fmt.Errorf("semaphore-wireguard does not run")
	}
	pid, err := testbed.PodProcessWith(rec.Controllers[i].PodUID, serviceAccountDir)
	if err != nil {
		return nil, err
	}
	return nil, syscall.Kill(pid, syscall.SIGKILL)
}

// cutNode takes node off its network until the returned function brings it back.
func cutNode(_ context.Context, l *env.Lab, node layout.Node) (func() error, error) {
	return l.CutNode(node)
}

// activeGateways are cluster's active gateways toward each of remotes.
func activeGateways(ctx context.Context, rec *layout.Record, cluster string, remotes []string) (map[string]string, error) {
	out := map[string]string{}
	for _, r := range remotes {
		gw, err := status.ActiveGateway(ctx, rec, cluster, r)
		if err != nil {
			return nil, err
		}
		out[r] = gw
	}
	return out, nil
}

// waitGateways waits, for up to within, until no remote's active gateway is the one of before
// it was, and returns the last it read and how long that took (", not changed within ..."
// when it did not; an agent that comes back before its Lease runs out takes it back).
func waitGateways(ctx context.Context, rec *layout.Record, cluster string, remotes []string, before map[string]string, within time.Duration) (map[string]string, string) {
	start := time.Now()
	last := before
	for time.Since(start) < within {
		now, err := activeGateways(ctx, rec, cluster, remotes)
		if err == nil {
			last = now
			changed := true
			for r, gw := range now {
				changed = changed && gw != "" && gw != before[r]
			}
			if changed {
				return now, fmt.Sprintf(", elected %s after the loss", time.Since(start).Round(100*time.Millisecond))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last, fmt.Sprintf(", not changed within %s", within)
}

// describeGateways is "gcp-node-2 toward aws, gcp-node-2 toward merit".
func describeGateways(gateways map[string]string) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(gateways)) {
		parts = append(parts, fmt.Sprintf("%s toward %s", gateways[r], r))
	}
	return strings.Join(parts, ", ")
}

// failoverGaps prints the longest gap of the tunnels of cluster's pods on its other nodes, and
// names every one down for longer than failoverBound; and the longest of the pods on the lost
// node itself, which depend on that node and are not held to the bound.
func failoverGaps(l *env.Lab, cluster, lost string, gaps []tunnelGap) []string {
	var problems []string
	var others, own *tunnelGap
	for i, g := range gaps {
		switch {
		case g.pair.from.Cluster != cluster && g.pair.to.Cluster != cluster:
			continue
		case g.pair.from.Node == lost || g.pair.to.Node == lost:
			if own == nil {
				own = &gaps[i]
			}
			continue
		}
		if others == nil {
			others = &gaps[i]
		}
		if g.longest > failoverBound {
			problems = append(problems, fmt.Sprintf("the tunnel %s was down for %s, longer than %s",
				g.pair, g.longest.Round(10*time.Millisecond), failoverBound))
		}
	}
	for _, g := range []struct {
		what string
		gap  *tunnelGap
	}{{"the other nodes' pods", others}, {"the lost node's own pods", own}} {
		if g.gap != nil {
			fmt.Fprintf(l.Out(), "    longest without an answer, %s: %s (%s)\n", g.what, g.gap.longest.Round(10*time.Millisecond), g.gap.pair)
		}
	}
	return problems
}

// settleAfterFailover records the pods again (an agent started again) and waits until the mesh
// is ready.
func settleAfterFailover(ctx context.Context, l *env.Lab) []string {
	if err := l.RecordPods(ctx); err != nil {
		return []string{err.Error()}
	}
	start := time.Now()
	if _, problems := status.WaitReady(ctx, l.Record(), 3*time.Minute, l.Exited()); len(problems) > 0 {
		return append([]string{"after the failover, the mesh is not ready:"}, problems...)
	}
	fmt.Fprintf(l.Out(), "    the mesh ready again %s later\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// nodeNamed is the lab's node named name.
func nodeNamed(rec *layout.Record, name string) (layout.Node, bool) {
	i := slices.IndexFunc(rec.Nodes.Nodes, func(n layout.Node) bool { return n.Name == name })
	if i < 0 {
		return layout.Node{}, false
	}
	return rec.Nodes.Nodes[i], true
}
