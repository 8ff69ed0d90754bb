// Package multiremote is the skeleton of a controller that reads several remote clusters into
// one workqueue, fair between the remotes (package fairqueue). It holds what does not depend on
// what the controller watches: each remote's informers and the gate that keeps a remote's
// objects untouched until its caches synced, the enqueue of a remote's keys once they have, the
// local informers and the handlers of the objects the controller writes, the workers with their
// metrics, the results of a sync, events and the periodic inventory. A controller adds its
// informers, its keys and its sync.
package multiremote

import (
	"context"
	"iter"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/multiremote/expectations"
	"github.com/kube-semaphore/semaphore/internal/multiremote/fairqueue"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Config is what a controller tells the skeleton; the fields marked optional are left zero by
// a controller without local objects (no sources, events, writes or inventory).
type Config[K comparable] struct {
	// Queue names the workqueue in its metrics (the queues of all remotes share the name).
	Queue        string
	QueueMetrics workqueue.MetricsProvider
	// Sync reconciles one key and says how it went (a reconcile.Result).
	Sync func(context.Context, K) (reconcile.Result, error)
	// Remote names the remote a key belongs to: its queue and the label of its metrics.
	Remote func(K) string
	// Counters count the syncs and, when set, the writes.
	Counters Counters
	Health   *remote.Health
	Log      *slog.Logger
	// OnRemoteSynced enqueues the keys of every object a remote holds, once its caches synced.
	OnRemoteSynced func(*Remote)

	// Component is the managed-by label value of the local objects the controller writes, and
	// the source of its events. Optional.
	Component string
	// SourceOf returns the key a local object of ours stands for, from its labels. Optional.
	SourceOf func(labels map[string]string) (K, bool)
	// SourceIndex names the index IndexBySource computes (default BySource): two controllers
	// whose objects share one informer each need an index of their own.
	SourceIndex string
	// EnqueueLocal enqueues the source of every local object of ours whose source matches.
	// Optional: with it, the objects of remotes no longer configured are enqueued once the
	// local caches synced, and those of a remote once it synced (the source may be gone).
	EnqueueLocal func(match func(K) bool)
	// LocalLog are the attributes logged with "local caches synced". Optional.
	LocalLog []any
	// Namespaced says the controller writes objects in many namespaces: they are known by
	// namespace/name (ObjectName), not by name alone.
	Namespaced bool
	// Events is the local client events are recorded with. Optional.
	Events kubernetes.Interface
	// Inventory, run every InventoryInterval, refreshes the inventory gauges. Optional.
	Inventory         func(context.Context)
	InventoryInterval time.Duration
}

// Controller is the skeleton: the queue, the remotes and the local informers of a controller.
type Controller[K comparable] struct {
	Queue workqueue.TypedRateLimitingInterface[K]
	// Clashes are the keys whose object name is held by a local object we do not own.
	Clashes *reconcile.Clashes[K]
	// Expect remembers our writes until the local caches show them.
	Expect *expectations.Tracker
	// Recorder records events; nil without Config.Events.
	Recorder record.EventRecorder

	cfg         Config[K]
	loop        *reconcile.Loop[K]
	broadcaster record.EventBroadcaster
	remotes     map[string]*Remote
	local       []Factory
	localSynced []cache.InformerSynced
}

// New returns a skeleton with an empty set of remotes and local informers.
func New[K comparable](cfg Config[K]) *Controller[K] {
	// Fair between remotes: one whose objects churn does not hold up another's changes. A
	// controller whose keys belong to no single remote (Remote names one for all) has one
	// remote's queue, which is client-go's.
	queue := fairqueue.New(fairqueue.Config[K]{
		Name:            cfg.Queue,
		MetricsProvider: cfg.QueueMetrics,
		RateLimiter:     workqueue.DefaultTypedControllerRateLimiter[K],
		Remote:          cfg.Remote,
	})
	c := &Controller[K]{
		Queue:   queue,
		Clashes: reconcile.NewClashes[K](),
		Expect:  expectations.New(),
		cfg:     cfg,
		remotes: map[string]*Remote{},
		loop:    &reconcile.Loop[K]{Queue: queue, Sync: cfg.Sync, Remote: cfg.Remote, Metrics: cfg.Counters.Reconcile, Log: cfg.Log},
	}
	if cfg.Events != nil {
		c.broadcaster = record.NewBroadcaster()
		c.Recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: cfg.Component})
	}
	return c
}

// AddRemote adds a remote, whose informers the controller then adds with Remote.Watch. Its
// reconcile results are exported at zero from now on.
func (c *Controller[K]) AddRemote(name string) *Remote {
	r := &Remote{Name: name}
	c.remotes[name] = r
	c.cfg.Counters.Reconcile.InitRemote(name)
	return r
}

// Remotes are the names of the configured remotes.
func (c *Controller[K]) Remotes() iter.Seq[string] { return maps.Keys(c.remotes) }

// WatchLocal adds a factory of local informers; synced tell when they have synced.
func (c *Controller[K]) WatchLocal(f Factory, synced ...cache.InformerSynced) {
	c.local = append(c.local, f)
	c.localSynced = append(c.localSynced, synced...)
}

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller[K]) LocalSynced() bool {
	for _, s := range c.localSynced {
		if !s() {
			return false
		}
	}
	return true
}

// Run starts the informers and workers and blocks until ctx is done. The workers start once
// the local caches synced. A remote whose API server is unreachable does not hold up the
// others: each remote syncs on its own, and until it has, Remote.Ready is false.
func (c *Controller[K]) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	if c.broadcaster != nil {
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.cfg.Events.CoreV1().Events("")})
		defer c.broadcaster.Shutdown()
	}
	c.Warm(ctx)
	for _, f := range c.local {
		defer f.Shutdown()
	}
	if len(c.local) > 0 {
		if !cache.WaitForCacheSync(ctx.Done(), c.localSynced...) {
			c.Queue.ShutDown()
			return
		}
		c.cfg.Log.Info("local caches synced", c.cfg.LocalLog...)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	for _, r := range c.remotes {
		for _, f := range r.factories {
			defer f.Shutdown()
		}
		wg.Go(func() { c.waitForRemote(ctx, r) })
	}
	if c.cfg.EnqueueLocal != nil {
		// Objects of remotes no longer configured are garbage-collected straight away.
		c.cfg.EnqueueLocal(func(k K) bool { return c.remotes[c.cfg.Remote(k)] == nil })
	}
	if c.cfg.Inventory != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, c.cfg.Inventory, c.cfg.InventoryInterval) })
	}
	c.loop.Run(ctx, workers)
}

// Warm starts the informers, local and remote, without the workers, until ctx (the one Run
// is given, or one that ends with it) is done: a replica that waits before it may act, such as
// a rollout's successor standing by beside its predecessor, fills its caches meanwhile, and Run
// finds them synced. Run starts them too; a factory starts each informer once.
func (c *Controller[K]) Warm(ctx context.Context) {
	for _, f := range c.local {
		f.Start(ctx.Done())
	}
	for _, r := range c.remotes {
		for _, f := range r.factories {
			f.Start(ctx.Done())
		}
	}
}

func (c *Controller[K]) waitForRemote(ctx context.Context, r *Remote) {
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return
	}
	r.ready.Store(true)
	c.cfg.Health.MarkSynced(r.Name)
	c.cfg.Log.Info("remote caches synced", "remote", r.Name)
	// Every object of the remote, and the local objects of ours too, so that those whose source
	// went away while we were not watching are removed. Events from here on are queued by the
	// handlers.
	c.cfg.OnRemoteSynced(r)
	if c.cfg.EnqueueLocal != nil {
		c.cfg.EnqueueLocal(func(k K) bool { return c.cfg.Remote(k) == r.Name })
	}
}
