package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
)

// The global service's failover, timed.
const (
	// globalWindow is how long the check counts requests in each phase.
	globalWindow = 2 * time.Second
	// globalMaxOutage is the longest the client's requests may fail while its cluster's echo
	// goes away or comes back: the time for the EndpointSlice, the global copy and kube-proxy
	// to follow, with room to spare.
	globalMaxOutage = 5 * time.Second
)

// failover is the check of the global service's local-first routing: where the client's
// requests go while its cluster's echo runs, is gone, and is back.
type failover struct {
	l *env.Lab
	// Requests are the client's, and the echo pods', of every cluster, whose logs count.
	observe.Requests
}

// window is one window of requests counted.
type window struct {
	from, to time.Time
	counts   map[string]int
}

func (w window) String() string {
	var parts []string
	for _, c := range layout.ClusterNames() {
		parts = append(parts, fmt.Sprintf("%s %d", c, w.counts[c]))
	}
	return fmt.Sprintf("%s requests in %s", strings.Join(parts, ", "), w.to.Sub(w.from).Round(100*time.Millisecond))
}

// local tells whether the client's cluster served requests in the window, and no other did.
func (w window) local() bool {
	others := 0
	for c, n := range w.counts {
		if c != layout.GlobalCluster {
			others += n
		}
	}
	return w.counts[layout.GlobalCluster] > 0 && others == 0
}

// remote tells whether other clusters served requests in the window, and the client's did not.
func (w window) remote() bool {
	others := 0
	for c, n := range w.counts {
		if c != layout.GlobalCluster {
			others += n
		}
	}
	return w.counts[layout.GlobalCluster] == 0 && others > 0
}

// count counts the windows of globalWindow from start on until ok accepts one, or one ends
// later than within after start; it returns the last one.
func (f *failover) count(ctx context.Context, start time.Time, within time.Duration, ok func(window) bool) (window, bool, error) {
	for from := start; ; {
		w := window{from: from, to: from.Add(globalWindow)}
		// The lines of the window's last requests are written a little after them.
		if err := observe.SleepUntil(ctx, w.to.Add(300*time.Millisecond)); err != nil {
			return w, false, err
		}
		var err error
		if w.counts, err = f.Served(w.from, w.to); err != nil {
			return w, false, err
		}
		if ok(w) {
			return w, true, nil
		}
		if w.to.Sub(start) >= within {
			return w, false, nil
		}
		from = w.to
	}
}

// outage summarizes the client's attempts: how many failed, and the longest run of failures,
// from its first failure to the next success (or the last attempt).
func outage(attempts []podlog.Record) (failed int, longest time.Duration) {
	var start time.Time
	for _, a := range attempts {
		switch {
		case a.Failed():
			failed++
			if start.IsZero() {
				start = a.Time
			}
			longest = max(longest, a.Time.Sub(start))
		case !start.IsZero():
			longest = max(longest, a.Time.Sub(start))
			start = time.Time{}
		}
	}
	return failed, longest
}

// checkGlobalFailover checks local-first routing end to end: the client's requests reach its own
// cluster's echo only; with that echo scaled to zero they reach the other clusters' (failing
// for no longer than globalMaxOutage); scaled back, its own again. It prints what it measured
// and returns the problems.
func checkGlobalFailover(ctx context.Context, l *env.Lab) []string {
	rec := l.Record()
	fmt.Fprintf(l.Out(), "Global service failover (%s/%s -> http://%s:%d/ every %s, local-first; requests as logged by each cluster's %s pods)\n",
		layout.GlobalCluster, layout.GlobalClientName, layout.GlobalDNSName(), layout.GlobalPort, layout.GlobalInterval, layout.GlobalName)
	if rec.NodesSkipped() {
		fmt.Fprintf(l.Out(), "  skipped: %s\n", rec.Nodes.Skipped)
		return nil
	}
	clients := rec.PodsOf(layout.GlobalCluster, layout.GlobalClientName)
	if len(clients) != 1 {
		return []string{fmt.Sprintf("%s: %d %s pods, want 1", layout.GlobalCluster, len(clients), layout.GlobalClientName)}
	}
	f, local, remote := echoFailover(l, clients[0])
	problems, err := f.run(ctx, local, remote)
	if err != nil {
		problems = append(problems, fmt.Sprintf("global service failover: %v", err))
	}
	return problems
}

// echoFailover is the failover check of client's requests to echo: the echo pods of
// GlobalCluster (local) and of the other clusters (remote), as the lab recorded them.
func echoFailover(l *env.Lab, client layout.Pod) (f *failover, local, remote []layout.Pod) {
	rec := l.Record()
	for _, c := range layout.ClusterNames() {
		if c == layout.GlobalCluster {
			local = rec.PodsOf(c, layout.GlobalName)
		} else {
			remote = append(remote, rec.PodsOf(c, layout.GlobalName)...)
		}
	}
	return &failover{l: l, Requests: observe.Requests{Client: client, Servers: append(slices.Clone(local), remote...)}}, local, remote
}

// run runs the three phases of the failover check.
func (f *failover) run(ctx context.Context, local, remote []layout.Pod) ([]string, error) {
	if problems, err := f.stayLocal(ctx); err != nil || len(problems) > 0 {
		return problems, err
	}
	problems, err := f.failOver(ctx, local, remote)
	if err != nil {
		return problems, err
	}
	back, err := f.failBack(ctx, local, remote)
	return append(problems, back...), err
}

// stayLocal is the first phase: the status is good, so the hints are there; kube-proxy follows
// within a sync.
func (f *failover) stayLocal(ctx context.Context) ([]string, error) {
	start := time.Now()
	w, ok, err := f.count(ctx, start, 10*time.Second, window.local)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f.l.Out(), "  local:       %s (%s after the status was good)\n", w, w.to.Sub(start).Round(100*time.Millisecond))
	if !ok {
		return []string{fmt.Sprintf("global service: the requests of %s do not stay in %s: %s", f.Client.Name, layout.GlobalCluster, w)}, nil
	}
	return nil, nil
}

// failOver is the second phase: with the local echo scaled to 0 no local endpoint is ready,
// so kube-proxy ignores the hints and sends the requests to the other clusters.
func (f *failover) failOver(ctx context.Context, local, remote []layout.Pod) ([]string, error) {
	down := time.Now()
	if err := scaleGlobal(ctx, f.l, 0); err != nil {
		return nil, err
	}
	first, ok, err := observe.Requests{Client: f.Client, Servers: remote}.FirstServed(ctx, down, 20*time.Second)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []string{fmt.Sprintf("global service: no request of %s reached another cluster within 20s of %s's echo scaled to 0", f.Client.Name, layout.GlobalCluster)}, nil
	}
	w, ok, err := f.count(ctx, first, globalWindow, window.remote)
	if err != nil {
		return nil, err
	}
	// Requests to the local pods that went: their logs may be gone, the client's replies are not.
	sent, err := f.Attempts(down, w.to)
	if err != nil {
		return nil, err
	}
	for _, a := range sent {
		if !a.Time.Before(w.from) && slices.ContainsFunc(local, func(p layout.Pod) bool { return a.Reply == "served by "+p.Name }) {
			w.counts[layout.GlobalCluster]++
			ok = false
		}
	}
	failed, longest := outage(sent)
	fmt.Fprintf(f.l.Out(), "  failed over: %s; the first one %s after %s's echo was scaled to 0; %d of %d attempts failed, for %s at most\n",
		w, first.Sub(down).Round(10*time.Millisecond), layout.GlobalCluster, failed, len(sent), longest.Round(10*time.Millisecond))
	var problems []string
	if !ok {
		problems = append(problems, fmt.Sprintf("global service: with %s's echo scaled to 0, the requests of %s do not go to the other clusters: %s", layout.GlobalCluster, f.Client.Name, w))
	}
	return append(problems, f.tooLong(longest, "failing over")...), nil
}

// failBack is the third phase: a local endpoint is ready again, and the hints hold again.
func (f *failover) failBack(ctx context.Context, local, remote []layout.Pod) ([]string, error) {
	up := time.Now()
	if err := scaleGlobal(ctx, f.l, layout.GlobalReplicas); err != nil {
		return nil, err
	}
	back, readyAt, err := waitGlobalPods(ctx, f.l, local)
	if err != nil {
		return nil, err
	}
	f.Servers = append(slices.Clone(back), remote...)
	first, ok, err := observe.Requests{Client: f.Client, Servers: back}.FirstServed(ctx, up, 20*time.Second)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []string{fmt.Sprintf("global service: no request of %s reached %s's echo within 20s of its pods being ready again", f.Client.Name, layout.GlobalCluster)}, nil
	}
	w, ok, err := f.count(ctx, first, 5*time.Second, window.local)
	if err != nil {
		return nil, err
	}
	sent, err := f.Attempts(up, w.to)
	if err != nil {
		return nil, err
	}
	failed, longest := outage(sent)
	fmt.Fprintf(f.l.Out(), "  back:        %s; %s's echo ready %s after it was scaled to %d, the first request to it %s after that; %d of %d attempts failed\n",
		w, layout.GlobalCluster, readyAt.Sub(up).Round(10*time.Millisecond), layout.GlobalReplicas, first.Sub(readyAt).Round(10*time.Millisecond), failed, len(sent))
	var problems []string
	if !ok {
		problems = append(problems, fmt.Sprintf("global service: with %s's echo back, the requests of %s do not stay in %s: %s", layout.GlobalCluster, f.Client.Name, layout.GlobalCluster, w))
	}
	return append(problems, f.tooLong(longest, "failing back")...), nil
}

// tooLong is a problem when the client's requests failed for longer than globalMaxOutage.
func (f *failover) tooLong(longest time.Duration, while string) []string {
	if longest <= globalMaxOutage {
		return nil
	}
	return []string{fmt.Sprintf("global service: the requests of %s failed for %s while %s (at most %s)", f.Client.Name, longest.Round(10*time.Millisecond), while, globalMaxOutage)}
}

// scaleGlobal scales GlobalCluster's echo to replicas.
func scaleGlobal(ctx context.Context, l *env.Lab, replicas int32) error {
	return observe.ScaleDeployment(ctx, l.Cluster(layout.GlobalCluster).Client, layout.SampleNamespace, layout.GlobalName, replicas)
}

// waitGlobalPods waits until GlobalCluster's echo has GlobalReplicas ready pods, none of old,
// records them in the state in place of old, and returns them and when the first was seen
// ready (the Pods' conditions have their times in seconds only).
func waitGlobalPods(ctx context.Context, l *env.Lab, old []layout.Pod) ([]layout.Pod, time.Time, error) {
	rec := l.Record()
	var pods []layout.Pod
	var firstReady time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// An error (the API server busy) is asked again, like pods not ready yet.
		list, err := l.Cluster(layout.GlobalCluster).Client.CoreV1().Pods(layout.SampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + layout.GlobalName})
		pods = nil
		for _, pod := range observe.PodsOrNone(list, err) {
			if pod.DeletionTimestamp != nil || !observe.PodReady(&pod) || slices.ContainsFunc(old, func(p layout.Pod) bool { return p.UID == string(pod.UID) }) {
				continue
			}
			pods = append(pods, rec.PodOf(layout.GlobalCluster, &pod))
		}
		if len(pods) > 0 && firstReady.IsZero() {
			firstReady = time.Now()
		}
		return len(pods) == int(layout.GlobalReplicas), nil
	})
	if err != nil {
		return nil, firstReady, fmt.Errorf("%s's echo is not back with %d ready pods: %w", layout.GlobalCluster, layout.GlobalReplicas, err)
	}
	l.ReplacePods(layout.GlobalCluster, layout.GlobalName, pods)
	return pods, firstReady, nil
}
