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

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/trimmed"
	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Options configure a Controller.
type Options struct {
	// Namespace is the local namespace that holds every global Service.
	Namespace string
	// MirrorNamespace are the informers of Namespace, shared with the mirrors.
	MirrorNamespace *caches.MirrorNamespace
	// LocalCluster is the name of the local cluster, as the remotes know it.
	LocalCluster string
	// Selector picks the Services, in every cluster, that are global services.
	Selector labels.Selector
	// ResyncPeriod re-reconciles every object periodically (0 disables).
	ResyncPeriod time.Duration
	// InventoryInterval is how often the inventory gauges are recomputed.
	InventoryInterval time.Duration
	// RemoteSlices are the remotes' EndpointSlice informers, shared with the mirrors.
	RemoteSlices *caches.RemoteSlices
	// Withdraw says which remotes' endpoints are withdrawn (nil: none ever are).
	Withdraw *withdraw.Tracker
	// Guard refuses the endpoint addresses a remote may not publish (nil: the rules alone), and
	// Refusals reports them, each once.
	Guard    *addrguard.Guard
	Refusals *addrguard.Reporter
	// Adopter takes over the original tool's global Services (nil: never).
	Adopter *adopt.Adopter
	// Limit bounds the global services each remote contributes to (nil: no bound).
	Limit *limit.Limit
}

// Controller serves global services in the local cluster.
type Controller struct {
	base    *multiremote.Controller[global.Key]
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	write   *apply.Writer[global.Key]

	// ours and oursSlices are the Services and EndpointSlices of the mirror namespace (the
	// mirrors' too), ours indexed by source.
	ours       corelisters.ServiceLister
	oursSlices cache.Indexer
	zones      *zones

	// clusters are the local cluster and the remotes, by name.
	clusters  map[string]*cluster
	announced *announced
	// started is when Run started (before that, no sync runs).
	started time.Time
	// postponed are the new global services waiting for a remote to sync (mayStillWin).
	postponed *keySet
}

// cluster is what the controller reads of one cluster: its selected Services and its slices.
type cluster struct {
	name string
	// remote is nil for the local cluster, whose caches are synced before any sync runs.
	remote   *multiremote.Remote
	services corelisters.ServiceLister
	slices   cache.Indexer
	// limited are a remote's selected Services in order, of which the first contribute; nil
	// (everything contributes) for the local cluster.
	limited *limit.Set
}

func (c *cluster) ready() bool { return c.remote == nil || c.remote.Ready() }

// New wires informers for the local cluster and for each remote. meta reads the local Nodes'
// metadata (their zone labels).
func New(opts Options, local kubernetes.Interface, meta metadata.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	c := &Controller{opts: opts, log: log, metrics: m, clusters: map[string]*cluster{}, announced: newAnnounced(), postponed: &keySet{}}
	c.base = multiremote.New(multiremote.Config[global.Key]{
		Queue:        "service_mirror_global",
		QueueMetrics: queueMetrics,
		Sync:         c.sync,
		// A global service belongs to no single remote: its syncs are counted without one.
		Remote:            func(global.Key) string { return "" },
		Metrics:           m.reconcile,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.ServiceMirror,
		SourceOf:          global.KeyOf,
		SourceIndex:       "global-source",
		EnqueueLocal:      c.enqueueOurs,
		LocalLog:          []any{"namespace", opts.Namespace, "global", true},
		Events:            local,
		Writes:            m.writes,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.InventoryInterval,
	})
	c.watchLocal(local, meta)
	if opts.Withdraw != nil {
		opts.Withdraw.OnChange(func(string) { c.enqueueAllOurs() })
	}
	m.initCluster(opts.LocalCluster)
	for _, r := range remotes {
		c.clusters[r.Name] = c.watchRemote(r)
		m.initCluster(r.Name)
	}
	return c
}

// watchLocal adds the local informers: the mirror namespace (shared with the mirrors), the
// EndpointSlices of every other namespace (the sources of the local cluster's global
// services), the local cluster's selected Services and the Nodes' zones.
func (c *Controller) watchLocal(local kubernetes.Interface, meta metadata.Interface) {
	ns := c.opts.MirrorNamespace
	utilruntime.Must(ns.Slices.Informer().AddIndexers(cache.Indexers{c.base.SourceIndex(): c.base.IndexBySource}))
	c.ours, c.oursSlices = ns.Services.Lister(), ns.Slices.Informer().GetIndexer()
	// The mirror namespace is ours: no Service there is a source of a global service.
	others := informers.NewSharedInformerFactoryWithOptions(local, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("metadata.namespace", c.opts.Namespace).String()
		}),
		informers.WithTransform(trimmed.Slice))
	sources := others.Discovery().V1().EndpointSlices()
	utilruntime.Must(sources.Informer().AddIndexers(cache.Indexers{mirror.ByServiceName: mirror.IndexByServiceName}))
	selected := selectedServices(local, c.opts)
	services := selected.Core().V1().Services()
	c.zones = newZones(meta, c.opts.ResyncPeriod, c.enqueueAllOurs)
	localCluster := &cluster{name: c.opts.LocalCluster, services: services.Lister(), slices: sources.Informer().GetIndexer()}
	c.clusters[localCluster.name] = localCluster

	c.base.WatchLocal(ns.Factory, ns.Synced()...)
	c.base.WatchLocal(others, sources.Informer().HasSynced)
	c.base.WatchLocal(selected, services.Informer().HasSynced)
	c.base.WatchLocal(c.zones.factory, c.zones.synced)
	_, _ = ns.Services.Informer().AddEventHandler(c.base.LocalHandler(apply.ServiceKey))
	_, _ = ns.Slices.Informer().AddEventHandler(c.base.LocalHandler(apply.SliceKey))
	_, _ = services.Informer().AddEventHandler(handler(func(obj any) { c.onService(obj) }))
	_, _ = sources.Informer().AddEventHandler(handler(func(obj any) { c.onSlice(localCluster, obj) }))
	c.write = &apply.Writer[global.Key]{
		Base: c.base, Client: local, Namespace: c.opts.Namespace,
		ServiceCache: c.ours, SliceCache: c.oursSlices,
		UpdateService: global.UpdateService, Clash: c.reportClash,
		Adopt: func(_ global.Key, svc metav1.Object) bool { return c.opts.Adopter.AdoptGlobal(svc) },
	}
}

// selectedServices is a factory of informers on the Services opts.Selector selects.
func selectedServices(client kubernetes.Interface, opts Options) informers.SharedInformerFactory {
	selector := opts.Selector.String()
	return informers.NewSharedInformerFactoryWithOptions(client, opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(trimmed.Service))
}

func (c *Controller) watchRemote(r remote.Cluster) *cluster {
	rc := &cluster{name: r.Name, remote: c.base.AddRemote(r.Name), limited: c.opts.Limit.For(r.Name)}
	svcFactory := selectedServices(r.Client, c.opts)
	sliceFactory, slices := c.opts.RemoteSlices.For(r)
	services := svcFactory.Core().V1().Services()
	rc.services, rc.slices = services.Lister(), slices.GetIndexer()
	// The limit's handler sees every event, the remote ready or not, and enqueues once it is;
	// ours take no place (they are never sources). The remote is synced once it has seen every
	// Service listed.
	limited, err := services.Informer().AddEventHandler(limit.Handler(rc.limited, isOurs, func(k limit.Key) {
		if rc.remote.Ready() {
			c.base.Queue.Add(global.Key(k))
		}
	}))
	utilruntime.Must(err)
	_, _ = slices.AddEventHandler(rc.remote.Handler(func(obj any) { c.onSlice(rc, obj) }))
	rc.remote.Watch(svcFactory, services.Informer().HasSynced, limited.HasSynced)
	rc.remote.Watch(sliceFactory, slices.HasSynced)
	return rc
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

// onSlice enqueues the global service a slice of cl belongs to, when its Service is selected.
func (c *Controller) onSlice(cl *cluster, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	name := m.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	if _, err := cl.services.Services(m.GetNamespace()).Get(name); err == nil {
		c.base.Queue.Add(global.Key{Namespace: m.GetNamespace(), Name: name})
	}
}

// enqueueRemote enqueues every global service of a remote whose caches have just synced, and
// every one we serve: the remote may have dropped out of some while we were not watching.
func (c *Controller) enqueueRemote(r *multiremote.Remote) {
	services, _ := c.clusters[r.Name].services.List(labels.Everything())
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
	services, _ := c.ours.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		if k, ok := global.KeyOf(svc.Labels); ok && match(k) {
			c.base.Queue.Add(k)
		}
	}
	c.base.EnqueueIndexed(c.oursSlices, match)
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
func (c *Controller) ClusterCaches(cluster string) (corelisters.ServiceLister, cache.Indexer) {
	cl := c.clusters[cluster]
	if cl == nil {
		return nil, nil
	}
	return cl.services, cl.slices
}

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Controller) ResyncRemotes() { c.base.ResyncRemotes() }
