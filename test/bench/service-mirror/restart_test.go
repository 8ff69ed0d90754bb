package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

// handoverWait bounds each step of a restart or failover.
const handoverWait = 5 * time.Minute

// handover is how a service mirror takes over mirrors already in sync: restarted, or as the
// standby replica once the leader stops.
type handover struct {
	// lead is when it held the Lease (and, after a restart, was ready: its local caches
	// synced); caughtUp when it had reconciled every remote Service and its queue was empty.
	// Both from the moment the one before was told to stop.
	lead, caughtUp time.Duration
	// writes are those made meanwhile, to the local cluster.
	writes testenv.AuditEvents
	// change is how long a remote change made as the leader stopped took to reach its mirror.
	change time.Duration
}

// restart stops proc as the kubelet does and starts it again, as replica-a, against n mirrors
// in sync; it returns the new process.
func restart(b *testing.B, local *testenv.Cluster, proc *measure.Process, n int) (*measure.Process, handover) {
	return restartUntil(b, local, proc, func(admin measure.Admin) bool { return caughtUp(admin, n) })
}

// restartUntil is restart, caught up once done says so of the new process's admin server.
func restartUntil(b *testing.B, local *testenv.Cluster, proc *measure.Process, done func(measure.Admin) bool) (*measure.Process, handover) {
	admin := measure.FreeAdmin(b)
	next := proc.Again(b, "restarted", admin.Setting(), "SEMAPHORE_LEADER_ELECT_IDENTITY=replica-a")
	before := local.WritesBut(b, userAgent)
	t0 := time.Now()
	proc.Terminate()
	next.Start(b)
	var h handover
	h.lead = waitSince(b, t0, next.Log, "leading", func() bool { return holder(b, local) == "replica-a" && admin.Ready() })
	h.caughtUp = waitSince(b, t0, next.Log, "caught up", func() bool { return done(admin) })
	time.Sleep(2 * time.Second) // the last watch events
	h.writes = local.WritesBut(b, userAgent)[len(before):]
	return next, h
}

// failover starts a standby with identity id next to leader, stops the leader as the kubelet
// does while one remote slice changes, and times the standby's takeover of n mirrors; it
// returns the standby, which logs to <name>.log.
func failover(b *testing.B, local *testenv.Cluster, leader *measure.Process, id, name string, n int, change func() *localChange) (*measure.Process, handover) {
	admin := measure.FreeAdmin(b)
	standby := leader.Again(b, name, admin.Setting(), "SEMAPHORE_LEADER_ELECT_IDENTITY="+id)
	standby.Start(b)
	waitSince(b, time.Now(), standby.Log, "standby ready", admin.Ready)
	time.Sleep(3 * time.Second) // it has found the Lease held
	before := local.WritesBut(b, userAgent)
	t0 := time.Now()
	c := change()
	leader.Terminate()
	var h handover
	h.lead = waitSince(b, t0, standby.Log, "Lease taken", func() bool { return holder(b, local) == id })
	h.caughtUp = waitSince(b, t0, standby.Log, "caught up", func() bool { return caughtUp(admin, n) })
	h.change = c.wait(b, standby.Log)
	time.Sleep(2 * time.Second)
	h.writes = local.WritesBut(b, userAgent)[len(before):]
	return standby, h
}

// waitSince waits, polling every 10 ms, until done and returns the time since t0.
func waitSince(b *testing.B, t0 time.Time, log, what string, done func() bool) time.Duration {
	for !done() {
		if time.Since(t0) > handoverWait {
			b.Fatalf("not %s after %v; see %s", what, handoverWait, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(t0)
}

// caughtUp reports whether the service mirror at admin has reconciled n remote Services with
// success (or more: some twice; a remote Service reconciled before its remote's caches synced
// is skipped, not counted) and has nothing queued.
func caughtUp(admin measure.Admin, n int) bool {
	return queueCaughtUp(admin, n, "semaphore_service_mirror_reconcile_total", "service_mirror")
}

// queueCaughtUp is caughtUp for the controller whose reconciliations are counted in
// reconciles and whose workqueue is queue.
func queueCaughtUp(admin measure.Admin, n int, reconciles, queue string) bool {
	samples, err := admin.Metrics("semaphore_service_mirror_")
	if err != nil {
		return false
	}
	reconciled := samples.Sum(reconciles, map[string]string{"result": "success"})
	depth := samples.Sum("semaphore_service_mirror_workqueue_depth", map[string]string{"name": queue})
	return reconciled >= float64(n) && depth == 0
}

// holder is the holder of the service mirror's Lease in local.
func holder(b *testing.B, local *testenv.Cluster) string {
	lease, err := local.Client.CoordinationV1().Leases(mirrorNS).Get(context.Background(), userAgent, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// localChange is one remote change on its way to the mirror the view watches.
type localChange struct {
	view   *localView
	marker string
	at     time.Time
}

// changeOne makes one change of the first slice of p through v, as change does, and returns
// it to wait for.
func changeOne(b *testing.B, v *localView, p *populated, marker string) *localChange {
	c := &localChange{view: v, marker: marker, at: time.Now()}
	v.change(b, p, 0, marker)
	return c
}

// wait waits until the view has seen the change and returns how long it took.
func (c *localChange) wait(b *testing.B, log string) time.Duration {
	for {
		if _, pending := c.view.pending.Load(c.marker); !pending {
			return time.Since(c.at)
		}
		if time.Since(c.at) > handoverWait {
			b.Fatalf("change %s not mirrored after %v; see %s", c.marker, handoverWait, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// report reports a handover's figures, named after what (restart or failover), and prints them.
func (h handover) report(b *testing.B, what string, n int) {
	b.ReportMetric(h.lead.Seconds(), what+"-lead-s")
	b.ReportMetric(h.caughtUp.Seconds(), what+"-caught-up-s")
	b.ReportMetric(float64(len(h.writes)), what+"-writes")
	line := fmt.Sprintf("service-mirror: %s against %d mirrors in sync: leading after %v, caught up after %v, %d writes%s",
		what, n, h.lead.Round(time.Millisecond), h.caughtUp.Round(time.Millisecond), len(h.writes), writeKinds(h.writes))
	if h.change > 0 {
		b.ReportMetric(h.change.Seconds(), what+"-change-s")
		line += fmt.Sprintf("; a change made as the leader stopped mirrored after %v", h.change.Round(time.Millisecond))
	}
	fmt.Println(line)
}

// twice lists the objects written more than once, whatever the answer: a write cut off in
// flight may have been applied, and one the successor makes again then is a duplicate.
func twice(writes testenv.AuditEvents) []string {
	counts := map[string]int{}
	for _, w := range writes {
		counts[w.ObjectRef.Resource+"/"+w.ObjectRef.Name]++
	}
	var out []string
	for obj, n := range counts {
		if n > 1 {
			out = append(out, obj)
		}
	}
	slices.Sort(out)
	return out
}

// writeKinds says what writes were, with their status codes, as " (update endpointslices
// <name>: 200 x1, ...)", or "" for none.
func writeKinds(writes testenv.AuditEvents) string {
	if len(writes) == 0 {
		return ""
	}
	counts := map[string]int{}
	for _, w := range writes {
		counts[fmt.Sprintf("%s %s %s: %d", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Name, w.ResponseStatus.Code)]++
	}
	kinds := make([]string, 0, len(counts))
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s x%d", k, n))
	}
	slices.Sort(kinds)
	return " (" + strings.Join(kinds, ", ") + ")"
}
