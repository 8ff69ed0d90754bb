// Package mirrorcontroller keeps the local mirrors of remote Services in line with the remote
// clusters: shared informers on each remote and on the mirror namespace feed one rate-limited
// workqueue keyed by remote Service; each sync computes the desired objects with package
// mirror from the caches and writes only what differs.
package mirrorcontroller

import (
	"context"
	"log/slog"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
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
	// Namespace is the local namespace that holds every mirror.
	Namespace string
	// MirrorNamespace are the informers of Namespace, shared with global services.
	MirrorNamespace *caches.MirrorNamespace
	// Selector picks the remote Services to mirror.
	Selector labels.Selector
	// ResyncPeriod re-reconciles every object periodically (0 disables).
	ResyncPeriod time.Duration
	// DriftInterval is how often the drift and inventory gauges are recomputed.
	DriftInterval time.Duration
	// RemoteSlices are the remotes' EndpointSlice informers, shared with global services.
	RemoteSlices *caches.RemoteSlices
	// Withdraw says which remotes' endpoints are withdrawn (nil: none ever are).
	Withdraw *withdraw.Tracker
	// Guard refuses the endpoint addresses a remote may not publish (nil: the rules alone), and
	// Refusals reports them, each once.
	Guard    *addrguard.Guard
	Refusals *addrguard.Reporter
	// Adopter takes over the original tool's mirrors (nil: never).
	Adopter *adopt.Adopter
	// Limit bounds the Services of each remote that are mirrored (nil: no bound).
	Limit *limit.Limit
}

// Controller mirrors remote Services into the local cluster.
type Controller struct {
	base    *multiremote.Controller[mirror.Source]
	opts    Options
	log     *slog.Logger
	local   kubernetes.Interface
	metrics *Metrics

	localServices corelisters.ServiceLister
	localSlices   cache.Indexer
	write         *apply.Writer[mirror.Source]

	remotes map[string]*remoteCache
	// mirrored is the inventory's set of mirrored sources, kept from one pass to the next.
	mirrored map[mirror.Source]bool
}

type remoteCache struct {
	*multiremote.Remote
	services corelisters.ServiceLister
	slices   cache.Indexer
	// limited are the remote's selected Services in order, of which the first are mirrored.
	limited *limit.Set
}

// New wires informers for the local mirror namespace and for each remote.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	c := &Controller{opts: opts, log: log, local: local, metrics: m, remotes: map[string]*remoteCache{}}
	c.base = multiremote.New(multiremote.Config[mirror.Source]{
		Queue:             "service_mirror",
		QueueMetrics:      queueMetrics,
		Sync:              c.sync,
		Remote:            func(s mirror.Source) string { return s.Cluster },
		Metrics:           m.reconcile,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.ServiceMirror,
		SourceOf:          mirror.SourceOf,
		EnqueueLocal:      c.enqueueMirrors,
		LocalLog:          []any{"namespace", opts.Namespace},
		Events:            local,
		Writes:            m.writes,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.DriftInterval,
	})

	ns := opts.MirrorNamespace
	utilruntime.Must(ns.Slices.Informer().AddIndexers(cache.Indexers{c.base.SourceIndex(): c.base.IndexBySource}))
	c.localServices = ns.Services.Lister()
	c.localSlices = ns.Slices.Informer().GetIndexer()
	c.base.WatchLocal(ns.Factory, ns.Synced()...)
	_, _ = ns.Services.Informer().AddEventHandler(c.base.LocalHandler(apply.ServiceKey))
	_, _ = ns.Slices.Informer().AddEventHandler(c.base.LocalHandler(apply.SliceKey))
	c.write = &apply.Writer[mirror.Source]{
		Base: c.base, Client: local, Namespace: opts.Namespace,
		ServiceCache: c.localServices, SliceCache: c.localSlices,
		UpdateService: mirror.UpdateService, Clash: c.reportClash,
		Adopt: func(src mirror.Source, svc metav1.Object) bool { return opts.Adopter.AdoptMirror(src.Cluster, svc) },
	}

	if opts.Withdraw != nil {
		opts.Withdraw.OnChange(func(remote string) {
			c.enqueueMirrors(func(s mirror.Source) bool { return s.Cluster == remote })
		})
	}
	for _, r := range remotes {
		c.remotes[r.Name] = c.newRemoteCache(r)
		// Zero before the first sync, so that dashboards show 0 rather than no data.
		for _, kind := range []string{apply.KindService, apply.KindEndpointSlice} {
			m.clashes.WithLabelValues(r.Name, kind)
		}
	}
	return c
}

func (c *Controller) newRemoteCache(r remote.Cluster) *remoteCache {
	rc := &remoteCache{Remote: c.base.AddRemote(r.Name), limited: c.opts.Limit.For(r.Name)}
	selector := c.opts.Selector.String()
	svcFactory := informers.NewSharedInformerFactoryWithOptions(r.Client, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(trimmed.Service))
	sliceFactory, sliceInformer := c.opts.RemoteSlices.For(r)
	svcInformer := svcFactory.Core().V1().Services()
	rc.services = svcInformer.Lister()
	rc.slices = sliceInformer.GetIndexer()

	// The limit's handler sees every event, the remote ready or not, and enqueues once it is.
	limited, err := svcInformer.Informer().AddEventHandler(limit.Handler(rc.limited, nil, func(k limit.Key) { c.onRemoteService(rc, k) }))
	utilruntime.Must(err)
	_, _ = sliceInformer.AddEventHandler(rc.Handler(func(obj any) { c.onRemoteSlice(rc, obj) }))
	// Services are listed with the selector, slices without (and shared): two factories. The
	// remote is synced once the limit's handler has seen every Service listed, too.
	rc.Watch(svcFactory, svcInformer.Informer().HasSynced, limited.HasSynced)
	rc.Watch(sliceFactory, sliceInformer.HasSynced)
	return rc
}

// onRemoteService enqueues a remote Service whose object or admission under the limit
// changed, once the remote is ready (every Service is enqueued when it becomes ready).
func (c *Controller) onRemoteService(rc *remoteCache, k limit.Key) {
	if rc.Ready() {
		c.base.Queue.Add(mirror.Source{Cluster: rc.Name, Namespace: k.Namespace, Name: k.Name})
	}
}

// onRemoteSlice enqueues the Service a remote slice belongs to, when that Service is selected.
func (c *Controller) onRemoteSlice(rc *remoteCache, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	name := m.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	if _, err := rc.services.Services(m.GetNamespace()).Get(name); err != nil {
		return
	}
	c.base.Queue.Add(mirror.Source{Cluster: rc.Name, Namespace: m.GetNamespace(), Name: name})
}

// enqueueRemote enqueues every selected Service of a remote whose caches have just synced.
func (c *Controller) enqueueRemote(r *multiremote.Remote) {
	services, _ := c.remotes[r.Name].services.List(labels.Everything())
	for _, s := range services {
		c.base.Queue.Add(mirror.Source{Cluster: r.Name, Namespace: s.Namespace, Name: s.Name})
	}
}

func (c *Controller) enqueueMirrors(match func(mirror.Source) bool) {
	services, _ := c.localServices.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		if s, ok := mirror.SourceOf(svc.Labels); ok && ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) && match(s) {
			c.base.Queue.Add(s)
		}
	}
	c.base.EnqueueIndexed(c.localSlices, match)
}

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable does not hold up the others: each remote syncs on its own, and until it has,
// its mirrors are neither updated nor garbage-collected.
func (c *Controller) Run(ctx context.Context, workers int) { c.base.Run(ctx, workers) }

// RemoteCaches are what the controller holds of remote, as cached (trimmed): its selected
// Services and its EndpointSlices; nil when remote is not configured. For inspection.
func (c *Controller) RemoteCaches(remote string) (corelisters.ServiceLister, cache.Indexer) {
	rc := c.remotes[remote]
	if rc == nil {
		return nil, nil
	}
	return rc.services, rc.slices
}

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Controller) ResyncRemotes() { c.base.ResyncRemotes() }
