package check

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// fromPods are the checks of remote from what the component's pods say of it in their metrics:
// whether it answers them (reachable), who they are there (identity), whether it forbade them
// anything (access) and, for wireguard, its peers, handshakes, mode and MTU. p is what probing the
// remote from this machine found (nothing without ProbeRemotes).
func (k *checker) fromPods(ctx context.Context, v controllers, remote string, p probed) []Result {
	res := func(check string) Result {
		return Result{Check: check, Cluster: v.c.LocalCluster(), Remote: remote, Component: v.c.Name}
	}
	switch {
	case v.err != nil:
		return []Result{fail(res(Reachable), "check-reachable", "listing the pods of %s: %v", v.c.WorkloadRef(), v.err)}
	case len(v.pods) == 0:
		return []Result{fail(res(Reachable), "check-reachable", "%s has no running pod to tell whether remote %s answers it", v.c.WorkloadRef(), remote)}
	}
	secrets := k.readSecrets(ctx, v.c, remote)
	host := secrets.host
	out := []Result{k.checkReachable(v, remote, host, res(Reachable))}
	if v.c.Name == release.WireGuard {
		out = append(out, k.checkPeers(v, remote, p, res(Peers)))
	}
	if len(v.readable()) == 0 {
		return out // reachable says why: nothing else can be told
	}
	out = append(out, checkIdentity(v, remote, host, secrets.want, res(Identity)), checkForbidden(v, remote, host, secrets.hostErr, res(Access)))
	if v.c.Name == release.WireGuard {
		out = append(out, k.checkHandshakes(v, remote, res(Handshakes)), checkWireGuardMode(v, remote, res(WireGuardMode)), k.checkMTU(ctx, v, remote, res(MTU)))
	}
	return out
}

// checkReachable says whether remote answers every pod of the component (its remote_up), and
// whether the pods that must have a current view of it (every pod, or the leader) synced it
// recently (remote_last_sync_timestamp_seconds).
func (k *checker) checkReachable(v controllers, remote, host string, res Result) Result {
	var unread, absent, down []string
	for _, p := range v.pods {
		where := v.where(p)
		if p.err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", where, p.err))
			continue
		}
		switch up, ok := p.metrics.Value(v.metric("remote_up"), "remote", remote); {
		case !ok:
			absent = append(absent, where)
		case up != 1:
			if n := rejections(v, p, host); n > 0 {
				where += fmt.Sprintf(" (%d requests answered 401 Unauthorized since it started: see identity)", int(n))
			}
			down = append(down, where)
		}
	}
	stale, fresh := v.staleViews(remote, k.opts.Now())
	switch {
	case len(unread) > 0:
		return fail(res, "check-reachable", "reading the metrics of %s through the API server's pod proxy: %s; pass --skip %s,%s where the API server cannot reach the pods",
			v.c.WorkloadRef(), most(unread, 3), Reachable, Peers)
	case len(absent) > 0:
		return fail(res, "check-reachable", "%s export no %s{remote=%q}: they do not read remote %s; restart them if SEMAPHORE_REMOTES changed since they started",
			most(absent, 5), v.metric("remote_up"), remote, remote)
	case len(down) > 0:
		return fail(res, "check-reachable", "remote %s's API server (%s) does not answer %s: %s is 0, its last probe of /readyz failed; see their logs (\"remote unreachable\") and the network path from their nodes",
			remote, orUnknown(host), most(down, 5), v.metric("remote_up"))
	case len(stale) > 0:
		return fail(res, "check-reachable", "remote %s answers, but %s: the caches of it have not synced; see their logs and the remote's RBAC (access)",
			remote, most(stale, 5))
	}
	return pass(res, "remote %s answers every pod (%s = 1 on %d); %s", remote, v.metric("remote_up"), len(v.pods), fresh)
}

// staleViews are the pods whose view of remote is not current, though it should be (syncing),
// and a description of those that are.
func (v controllers) staleViews(remote string, now time.Time) (stale []string, fresh string) {
	maxAge := max(3*v.probeInterval(), 30*time.Second)
	syncing := v.syncing(remote)
	if len(syncing) == 0 {
		return nil, "no pod's view of it could be read"
	}
	oldest := time.Duration(0)
	for _, p := range syncing {
		ts, _ := p.metrics.Value(v.metric("remote_last_sync_timestamp_seconds"), "remote", remote)
		at := promtext.Time(ts)
		switch age := now.Sub(at); {
		case at.IsZero():
			stale = append(stale, v.where(p)+" has never synced its view of it")
		case age > maxAge:
			stale = append(stale, fmt.Sprintf("%s last synced its view of it %s ago (more than %s)", v.where(p), age.Round(time.Second), maxAge))
		default:
			oldest = max(oldest, age)
		}
	}
	who := "the views of it are"
	if len(syncing) == 1 {
		who = fmt.Sprintf("the view of it of %s is", v.where(syncing[0]))
	}
	return stale, fmt.Sprintf("%s at most %s old", who, oldest.Round(time.Second))
}

// rejections are how many of p's requests to host were answered 401 Unauthorized.
func rejections(v controllers, p running, host string) float64 {
	if host == "" {
		return 0
	}
	return p.metrics.Sum(v.metric("client_requests_total"), "host", host, "code", "401")
}

func orUnknown(s string) string {
	if s == "" {
		return "address unknown"
	}
	return s
}
