package withdraw

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Metrics are the tracker's metrics.
type Metrics struct {
	withdrawn   *prometheus.GaugeVec
	withdrawals *prometheus.CounterVec
}

// NewMetrics creates the tracker's metrics on f.
func NewMetrics(f *metrics.Factory) *Metrics {
	return &Metrics{
		withdrawn:   f.GaugeVec("remote_withdrawn", "1 while the endpoints mirrored from the remote are withdrawn (marked not ready) by SEMAPHORE_WITHDRAW_AFTER, 0 otherwise.", "remote"),
		withdrawals: f.CounterVec("remote_withdrawals_total", "Times the endpoints mirrored from the remote were withdrawn after SEMAPHORE_WITHDRAW_AFTER without a successful sync.", "remote"),
	}
}

// Tracker applies a Policy to the remotes' health: it decides which remotes are withdrawn and
// tells the controllers, through OnChange, when a remote is withdrawn or comes back.
type Tracker struct {
	policy  Policy
	health  *remote.Health
	metrics *Metrics
	log     *slog.Logger
	started time.Time
	remotes []string

	mu        sync.Mutex
	withdrawn map[string]bool
	listeners []func(remote string)
}

// NewTracker tracks remotes under policy. A remote that never synced counts from now.
func NewTracker(policy Policy, remotes []string, health *remote.Health, m *Metrics, log *slog.Logger) *Tracker {
	t := &Tracker{policy: policy, health: health, metrics: m, log: log, started: time.Now(), remotes: remotes, withdrawn: map[string]bool{}}
	for _, r := range remotes {
		m.withdrawn.WithLabelValues(r).Set(0)
		m.withdrawals.WithLabelValues(r)
	}
	return t
}

// OnChange registers f, called with a remote's name each time it is withdrawn or comes back.
// Call it before Run.
func (t *Tracker) OnChange(f func(remote string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listeners = append(t.listeners, f)
}

// Withdrawn reports whether the endpoints of remote are withdrawn. A nil Tracker withdraws
// nothing.
func (t *Tracker) Withdrawn(remote string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.withdrawn[remote]
}

// Run re-evaluates every remote each interval until ctx is done. The interval bounds how late a
// withdrawal or a return is seen, on top of the health probe interval.
func (t *Tracker) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		t.Evaluate(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Evaluate decides, as of now, which remotes are withdrawn, and tells the listeners of every
// change.
func (t *Tracker) Evaluate(now time.Time) {
	for _, r := range t.remotes {
		after := t.policy.after(r)
		if after == 0 {
			continue
		}
		if t.set(r, t.stale(r, now, after)) {
			t.notify(r)
		}
	}
}

// stale reports whether remote has gone longer than after without a successful sync.
func (t *Tracker) stale(remote string, now time.Time, after time.Duration) bool {
	if t.health.Check(remote) == nil {
		return false
	}
	last := t.health.LastSync(remote)
	if last.IsZero() {
		last = t.started
	}
	return now.Sub(last) > after
}

// set records remote's state and reports whether it changed.
func (t *Tracker) set(remote string, withdrawn bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.withdrawn[remote] == withdrawn {
		return false
	}
	t.withdrawn[remote] = withdrawn
	if withdrawn {
		t.metrics.withdrawn.WithLabelValues(remote).Set(1)
		t.metrics.withdrawals.WithLabelValues(remote).Inc()
		t.log.Warn("remote's endpoints withdrawn: no successful sync for longer than SEMAPHORE_WITHDRAW_AFTER",
			"remote", remote, "after", t.policy.after(remote), "last_sync", t.health.LastSync(remote), "err", t.health.Check(remote))
	} else {
		t.metrics.withdrawn.WithLabelValues(remote).Set(0)
		t.log.Info("remote's endpoints restored: the remote answers again", "remote", remote)
	}
	return true
}

func (t *Tracker) notify(remote string) {
	t.mu.Lock()
	listeners := t.listeners
	t.mu.Unlock()
	for _, f := range listeners {
		f(remote)
	}
}
