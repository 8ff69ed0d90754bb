package mesh

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// accessFromMetrics gives each remote of each component the Access its pods' metrics tell.
func accessFromMetrics(views map[string]view, now time.Time, remote func(string) *RemoteState) {
	for _, v := range views {
		for _, name := range v.c.RemoteNames() {
			r := remote(name)
			r.Access = append(r.Access, v.access(name, now))
		}
	}
}

// access is what the pods whose view of remote counts (counted) say of it in their metrics: it
// is reachable when it answers each of them (remote_up is 1) and each synced its view of it
// recently (remote_last_sync_timestamp_seconds); the user is who they are there
// (remote_identity_info).
func (v view) access(remote string, now time.Time) Access {
	a := Access{Component: v.c.Name}
	counted := v.counted(remote)
	switch {
	case v.err != nil:
		a.Error = fmt.Sprintf("listing the pods of %s: %v", v.c.WorkloadRef(), v.err)
		return a
	case len(counted) == 0:
		a.Error = v.c.WorkloadRef() + " has no running pod to say whether the remote answers it"
		return a
	}
	var problems []string
	for i, p := range counted {
		if p.err != nil {
			problems = append(problems, v.where(p)+": "+p.err.Error())
			continue
		}
		if found := p.metrics.Where(v.metric("remote_identity_info"), "remote", remote); len(found) > 0 && a.User == "" {
			a.User = found[0].Labels["user"]
		}
		if synced := promtext.Time(v.lastSync(p, remote)); i == 0 || synced.Before(a.LastSync) {
			a.LastSync = synced
		}
		if why := v.problem(p, remote, now); why != "" {
			problems = append(problems, why)
		}
	}
	a.Reachable = len(problems) == 0
	a.Error = most(problems, 3)
	return a
}

// counted are the running pods whose view of remote counts: every pod's, but of replicas that
// elect a leader the leader's alone; when the Lease names no running pod, that of the pod that
// synced its view last (the leader, unless none ever synced: then any).
func (v view) counted(remote string) []scraped {
	var live []scraped
	for _, p := range v.running {
		if p.pod.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if !v.elected || len(live) == 0 {
		return live
	}
	latest := 0
	for i, p := range live {
		if p.pod.Name == v.leader {
			return live[i : i+1]
		}
		if v.lastSync(p, remote) > v.lastSync(live[latest], remote) {
			latest = i
		}
	}
	return live[latest : latest+1]
}

// problem says why the view of remote of p, whose metrics were read, is not that it answers:
// "" when it is.
func (v view) problem(p scraped, remote string, now time.Time) string {
	where := v.where(p)
	up, ok := p.metrics.Value(v.metric("remote_up"), "remote", remote)
	switch {
	case !ok:
		return fmt.Sprintf("%s exports no %s{remote=%q}: it does not read the remote; restart it if SEMAPHORE_REMOTES changed since it started", where, v.metric("remote_up"), remote)
	case up != 1:
		return fmt.Sprintf("%s says %s is %v: the remote did not answer its last probe of /readyz", where, v.metric("remote_up"), up)
	}
	synced := promtext.Time(v.lastSync(p, remote))
	switch age, maxAge := now.Sub(synced), v.maxSyncAge(); {
	case synced.IsZero():
		return where + " has never synced its view of the remote"
	case age > maxAge:
		return fmt.Sprintf("%s last synced its view of the remote %s ago (more than %s): its caches of it are not current", where, age.Round(time.Second), maxAge)
	}
	return ""
}

// lastSync is the Unix time p last synced its view of remote: 0 for never, -1 when its metrics
// could not be read.
func (v view) lastSync(p scraped, remote string) float64 {
	if p.err != nil {
		return -1
	}
	ts, _ := p.metrics.Value(v.metric("remote_last_sync_timestamp_seconds"), "remote", remote)
	return ts
}

// maxSyncAge is how old a pod's view of a remote may be: three of the component's probe
// intervals (SEMAPHORE_REMOTE_PROBE_INTERVAL, 10s by default), and at least 30s.
func (v view) maxSyncAge() time.Duration {
	interval, err := time.ParseDuration(cmp.Or(v.c.Env["SEMAPHORE_REMOTE_PROBE_INTERVAL"], "10s"))
	if err != nil || interval <= 0 {
		interval = 10 * time.Second
	}
	return max(3*interval, 30*time.Second)
}

// metric is the full name of the component's metric name.
func (v view) metric(name string) string { return release.MetricName(v.c.Name, name) }

// where names a pod in messages: with its node for a DaemonSet's, marked as the leader.
func (v view) where(p scraped) string {
	leader := ""
	if v.elected {
		leader = v.leader
	}
	return v.c.DescribePod(p.pod, leader)
}

// most joins at most n of s, saying how many more there are.
func most(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(s[:n], "; "), len(s)-n)
}
