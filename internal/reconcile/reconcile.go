// Package reconcile holds the parts of a workqueue controller that do not depend on what it
// reconciles: the worker loop with its metrics and the bookkeeping of name clashes.
package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// Result is how a sync went: the value of the result label of reconcile_total.
type Result string

// The results of a sync.
const (
	Success Result = "success"
	Error   Result = "error"
	// Clash: an object we do not own holds the name; it is left alone.
	Clash Result = "clash"
	// Skipped: the remote has not synced yet, or the cache lags our own write.
	Skipped Result = "skipped"
)

// results are every Result, in the order they are exported at zero.
var results = []Result{Success, Error, Clash, Skipped}

// Metrics count and time a controller's syncs, by remote unless made by NewTotalMetrics.
type Metrics struct {
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	byRemote   bool
}

// NewMetrics creates reconcile_total and reconcile_duration_seconds on f; what names the unit
// of work in their help ("one remote Service").
func NewMetrics(f *metrics.Factory, what string) *Metrics {
	return &Metrics{
		reconciles: f.CounterVec("reconcile_total",
			"Reconciliations of "+what+", by remote and result: success, error, clash (an object we did not create holds the name), skipped (the remote has not synced yet, or the cache lags our own write).", "remote", "result"),
		duration: f.HistogramVec("reconcile_duration_seconds",
			"Time to reconcile "+what+", by remote.", metrics.LatencyBuckets, "remote"),
		byRemote: true,
	}
}

// NewTotalMetrics creates reconcile_total (by result only) and reconcile_duration_seconds
// on f, for a controller whose unit of work belongs to no single remote.
func NewTotalMetrics(f *metrics.Factory, what string) *Metrics {
	m := &Metrics{
		reconciles: f.CounterVec("reconcile_total",
			"Reconciliations of "+what+", by result: success, error, clash (an object we did not create holds the name), skipped (a cache lags our own write, or what a cluster holds is not known yet).", "result"),
		duration: f.HistogramVec("reconcile_duration_seconds",
			"Time to reconcile "+what+".", metrics.LatencyBuckets),
	}
	m.initResults()
	return m
}

// labels are the label values of a sync of remote, then result when given.
func (m *Metrics) labels(remote string, result ...Result) []string {
	var values []string
	if m.byRemote {
		values = append(values, remote)
	}
	for _, r := range result {
		values = append(values, string(r))
	}
	return values
}

func (m *Metrics) initResults(remote ...string) {
	for _, result := range results {
		m.reconciles.WithLabelValues(append(remote, string(result))...)
	}
}

// InitRemote exports every result of remote at zero, before the first sync: a dashboard or
// alert on errors then sees 0, not "no data", until an error happens (Prometheus' advice for
// label values known in advance).
func (m *Metrics) InitRemote(remote string) {
	if m.byRemote {
		m.initResults(remote)
	}
}

// Loop runs the workers of a controller whose queue holds keys of type K.
type Loop[K comparable] struct {
	Queue workqueue.TypedRateLimitingInterface[K]
	// Sync reconciles one key and says how it went.
	Sync func(context.Context, K) (Result, error)
	// Remote names the remote a key belongs to, for metrics and logs.
	Remote  func(K) string
	Metrics *Metrics
	Log     *slog.Logger
}

// finishGrace is how long a sync under way when the loop stops may still write. A write cut
// off in flight may or may not have been applied, and the replica that takes over writes the
// same change again; the lease is released only once the loop has returned (package leader),
// so finishing costs the successor at most this long. It is well inside the time a replica
// that lost its lease keeps it in others' eyes (LeaseDuration - RenewDeadline, 5 s by default).
const finishGrace = 2 * time.Second

// Run starts workers and blocks until ctx is done and they have returned. It shuts the queue
// down when ctx is done, which is what makes the workers return: a sync under way finishes
// (for up to FinishGrace), and no other starts.
func (l *Loop[K]) Run(ctx context.Context, workers int) {
	syncCtx, cancel := withGrace(ctx, finishGrace)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(context.Context) {
				for l.next(ctx, syncCtx) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	l.Queue.ShutDown()
	wg.Wait()
}

// withGrace returns a context that ends grace after ctx does (or when cancelled).
func withGrace(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	graced, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return graced, func() { stop(); cancel() }
}

// next syncs the next key on syncCtx, or, once ctx is done, takes the keys left in the queue
// off it without syncing them. It returns false when the queue is shut down and empty.
func (l *Loop[K]) next(ctx, syncCtx context.Context) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	defer l.Queue.Done(key)
	if ctx.Err() != nil {
		return true
	}
	remote := l.Remote(key)
	start := time.Now()
	result, err := l.Sync(syncCtx, key)
	l.Metrics.duration.WithLabelValues(l.Metrics.labels(remote)...).Observe(time.Since(start).Seconds())
	l.Metrics.reconciles.WithLabelValues(l.Metrics.labels(remote, result)...).Inc()
	if err != nil {
		if ctx.Err() == nil {
			l.Log.Error("reconcile failed", "remote", remote, "key", fmt.Sprint(key), "err", err)
		}
		l.Queue.AddRateLimited(key)
		return true
	}
	l.Queue.Forget(key)
	return true
}

// MetaOf returns the metadata of an informer object, unwrapping DeletedFinalStateUnknown.
func MetaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return m, nil
}

// Clashes remembers, by object name, the keys whose object name is held by an object we do
// not own, so they are retried when that object goes away.
type Clashes[K comparable] struct {
	mu sync.Mutex
	m  map[string]K
}

// NewClashes returns an empty record.
func NewClashes[K comparable]() *Clashes[K] {
	return &Clashes[K]{m: map[string]K{}}
}

// Record notes that name, wanted by key, is held by a foreign object. It reports whether the
// clash is new, so it is announced (logged, an Event) once, not on every sync.
func (c *Clashes[K]) Record(name string, key K) (isNew bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, known := c.m[name]
	c.m[name] = key
	return !known
}

// Forget drops the clash on name.
func (c *Clashes[K]) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}

// Resolve drops the clash on name if key is the one waiting for it: key now holds the name.
// Another key waiting for the same name (two sources whose names coincide) keeps waiting.
func (c *Clashes[K]) Resolve(name string, key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[name] == key {
		delete(c.m, name)
	}
}

// Waiting returns the key waiting for name, if any.
func (c *Clashes[K]) Waiting(name string) (K, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[name]
	return k, ok
}
