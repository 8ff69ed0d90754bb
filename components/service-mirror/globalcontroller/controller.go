// Package globalcontroller keeps the local objects of global services in line with every
// cluster that has them: informers on each remote, on the local cluster's own Services and
// EndpointSlices, on the mirror namespace and on the local Nodes' zones feed one rate-limited
// workqueue keyed by global service; each sync merges the clusters' definitions with package
// global, computes the desired objects from the caches and writes only what differs.
package globalcontroller

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Options configure a Controller.
type Options struct {
	// Config is where global Services are written, shared with the mirrors.
	apply.Config
	// LocalCluster is the name of the local cluster, as the remotes know it.
	LocalCluster string
	// Selector picks the Services, in every cluster, that are global services.
	Selector labels.Selector
	// ResyncPeriod re-reconciles every local object periodically (0 disables).
	ResyncPeriod time.Duration
	// InventoryInterval is how often the inventory gauges are recomputed.
	InventoryInterval time.Duration
	// RemoteSlices are the remotes' EndpointSlice informers, shared with the mirrors.
	RemoteSlices *caches.RemoteSlices
	// Limit bounds the global services each remote contributes to (nil: no bound).
	Limit *limit.PerRemote
	// Zones are the local Nodes' zones, which local-first hints follow.
	Zones *caches.Zones
}

// Controller serves global services in the local cluster.
type Controller struct {
	base    *multiremote.Controller[global.Key]
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	// write writes the mirror namespace, and holds its Services and EndpointSlices (the
	// mirrors' too), the slices indexed by global service.
	write *apply.Writer[global.Key]
	zones *caches.Zones

	// clusters are the local cluster and the remotes, by name.
	clusters  map[string]*cluster
	announced *announced
	// started is when Run started (before that, no sync runs).
	started time.Time
	// postponed are the new global services waiting for a remote to sync (mayStillWin).
	postponed *keySet
}

// cluster is what the controller reads of one cluster: its selected Services and its slices,
// and for a remote, of which of those the first contribute. The local cluster's caches are
// synced before any sync runs (Remote nil), and all of its Services contribute (Limited nil).
type cluster struct {
	name string
	*caches.Selected
}

func (c *cluster) ready() bool { return c.Remote == nil || c.Remote.Ready() }

// New wires informers for the local cluster and for each remote.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	c := &Controller{opts: opts, log: log, metrics: m, clusters: map[string]*cluster{}, announced: newAnnounced(), postponed: &keySet{}}
	c.base = multiremote.New(multiremote.Config[global.Key]{
		Queue:        "service_mirror_global",
		QueueMetrics: queueMetrics,
		Sync:         c.sync,
		// A global service belongs to no single remote: its syncs are counted without one.
		Remote:            func(global.Key) string { return "" },
		Counters:          m.counters,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.ServiceMirror,
		SourceOf:          global.KeyOf,
		SourceIndex:       "global-source",
		EnqueueLocal:      c.enqueueOurs,
		LocalLog:          []any{"namespace", opts.Namespace, "global", true},
		Events:            local,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.InventoryInterval,
	})
	c.write = apply.NewWriter(c.base, local, opts.Config, apply.Rules[global.Key]{
		UpdateService: global.UpdateService, Clash: c.reportClash,
		Adopt: func(_ global.Key, svc metav1.Object) bool { return opts.Adopter.AdoptGlobal(svc) },
	})
	c.watchLocal(local)
	if opts.Withdraw != nil {
		opts.Withdraw.OnChange(func(string) { c.enqueueAllOurs() })
	}
	m.initCluster(opts.LocalCluster)
	for _, r := range remotes {
		c.clusters[r.Name] = &cluster{name: r.Name, Selected: opts.RemoteSlices.Select(c.base.AddRemote(r.Name), r, opts.Limit.For(r.Name), caches.Selection{
			Selector: opts.Selector,
			// Ours take no place (they are never sources).
			Ignore:  isOurs,
			Enqueue: c.enqueue,
		})}
		m.initCluster(r.Name)
	}
	return c
}

// watchLocal adds the local informers besides the mirror namespace's: the EndpointSlices of
// every other namespace (the sources of the local cluster's global services), the local
// cluster's selected Services and the Nodes' zones.
func (c *Controller) watchLocal(local kubernetes.Interface) {
	// The mirror namespace is ours: no Service there is a source of a global service.
	others := informers.NewSharedInformerFactoryWithOptions(local, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("metadata.namespace", c.opts.Namespace).String()
		}),
		informers.WithTransform(caches.TrimSlice))
	sources := others.Discovery().V1().EndpointSlices()
	utilruntime.Must(sources.Informer().AddIndexers(cache.Indexers{mirror.ByServiceName: mirror.IndexByServiceName}))
	selected := caches.SelectedServices(local, c.opts.Selector, c.opts.ResyncPeriod)
	services := selected.Core().V1().Services()
	c.zones = c.opts.Zones
	c.zones.OnChange(c.enqueueAllOurs)
	localCluster := &cluster{name: c.opts.LocalCluster, Selected: &caches.Selected{Services: services.Lister(), Slices: sources.Informer().GetIndexer()}}
	c.clusters[localCluster.name] = localCluster

	c.base.WatchLocal(others, sources.Informer().HasSynced)
	c.base.WatchLocal(selected, services.Informer().HasSynced)
	c.base.WatchLocal(c.zones.Factory, c.zones.Synced)
	_, _ = services.Informer().AddEventHandler(handler(func(obj any) { c.onService(obj) }))
	_, _ = sources.Informer().AddEventHandler(handler(caches.OnSlice(localCluster.Services, c.enqueue)))
}

// isOurs reports whether m is an object of ours: never the source of a global service.
func isOurs(m metav1.Object) bool {
	return ownership.IsManagedBy(m.GetLabels(), ownership.ServiceMirror)
}

// handler calls fn with the object of every add, update (the new object) and delete.
func handler(fn func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: fn, UpdateFunc: func(_, obj any) { fn(obj) }, DeleteFunc: fn}
}

// onService enqueues the global service of a selected Service of any cluster. Our own
// objects are never sources, whatever the selector.
func (c *Controller) onService(obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil || isOurs(m) {
		return
	}
	c.base.Queue.Add(global.Key{Namespace: m.GetNamespace(), Name: m.GetName()})
}

// enqueue enqueues the global service of a selected Service.
func (c *Controller) enqueue(k limit.Key) { c.base.Queue.Add(global.Key(k)) }

// enqueueRemote enqueues every global service of a remote whose caches have just synced, and
// every one we serve: the remote may have dropped out of some while we were not watching.
func (c *Controller) enqueueRemote(r *multiremote.Remote) {
	services, _ := c.clusters[r.Name].Services.List(labels.Everything())
	for _, s := range services {
		c.onService(s)
	}
	for _, k := range c.postponed.take() {
		c.base.Queue.Add(k)
	}
	c.enqueueAllOurs()
}

// enqueueOurs enqueues the global service of every local object of ours that matches.
func (c *Controller) enqueueOurs(match func(global.Key) bool) {
	services, _ := c.write.ServiceCache.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		if k, ok := global.KeyOf(svc.Labels); ok && match(k) {
			c.base.Queue.Add(k)
		}
	}
	c.base.EnqueueIndexed(c.write.SliceCache, match)
}

// enqueueAllOurs enqueues every global service we serve: when the local zones change
// (local-first hints follow them), or a remote's endpoints are withdrawn or come back.
func (c *Controller) enqueueAllOurs() { c.enqueueOurs(func(global.Key) bool { return true }) }

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable does not hold up the others: each remote syncs on its own, and until it has,
// what it contributed is kept as it is.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.started = time.Now()
	c.base.Run(ctx, workers)
}

// ClusterCaches are what the controller holds of cluster (the local one or a remote), as cached
// (trimmed): its selected Services and its EndpointSlices; nil when cluster is none of them.
// For inspection.
func (c *Controller) ClusterCaches(cluster string) *caches.Selected {
	if cl := c.clusters[cluster]; cl != nil {
		return cl.Selected
	}
	return nil
}

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Controller) ResyncRemotes() { c.base.ResyncRemotes() }
