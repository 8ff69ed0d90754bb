// Package mirrorcontroller keeps the local mirrors of remote Services in line with the remote
// clusters: shared informers on each remote and on the mirror namespace feed one rate-limited
// workqueue keyed by remote Service; each sync computes the desired objects with package
// mirror from the caches and writes only what differs.
package mirrorcontroller

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Options configure a Controller.
type Options struct {
	// Config is where mirrors are written, shared with global services.
	apply.Config
	// Selector picks the remote Services to mirror.
	Selector labels.Selector
	// DriftInterval is how often the drift and inventory gauges are recomputed.
	DriftInterval time.Duration
	// RemoteSlices are the remotes' EndpointSlice informers, shared with global services.
	RemoteSlices *caches.RemoteSlices
	// Limit bounds the Services of each remote that are mirrored (nil: no bound).
	Limit *limit.PerRemote
}

// Controller mirrors remote Services into the local cluster.
type Controller struct {
	base    *multiremote.Controller[mirror.Source]
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	write   *apply.Writer[mirror.Source]

	remotes map[string]*caches.Selected
	// mirrored is the inventory's set of mirrored sources, kept from one pass to the next.
	mirrored map[mirror.Source]bool
}

// New wires informers for the local mirror namespace and for each remote.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	c := &Controller{opts: opts, log: log, metrics: m, remotes: map[string]*caches.Selected{}}
	c.base = multiremote.New(multiremote.Config[mirror.Source]{
		Queue:             "service_mirror",
		QueueMetrics:      queueMetrics,
		Sync:              c.sync,
		Remote:            func(s mirror.Source) string { return s.Cluster },
		Counters:          m.counters,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.ServiceMirror,
		SourceOf:          mirror.SourceOf,
		EnqueueLocal:      c.enqueueMirrors,
		LocalLog:          []any{"namespace", opts.Namespace},
		Events:            local,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.DriftInterval,
	})
	c.write = apply.NewWriter(c.base, local, opts.Config, apply.Rules[mirror.Source]{
		UpdateService: mirror.UpdateService, Clash: c.reportClash,
		Adopt: func(src mirror.Source, svc metav1.Object) bool { return opts.Adopter.AdoptMirror(src.Cluster, svc) },
	})
	if opts.Withdraw != nil {
		opts.Withdraw.OnChange(func(remote string) {
			c.enqueueMirrors(func(s mirror.Source) bool { return s.Cluster == remote })
		})
	}
	for _, r := range remotes {
		c.remotes[r.Name] = opts.RemoteSlices.Select(c.base.AddRemote(r.Name), r, opts.Limit.For(r.Name), caches.Selection{
			Selector: opts.Selector,
			Enqueue: func(k limit.Key) {
				c.base.Queue.Add(mirror.Source{Cluster: r.Name, Namespace: k.Namespace, Name: k.Name})
			},
		})
		// Zero before the first sync, so that dashboards show 0 rather than no data.
		for _, kind := range []string{apply.KindService, apply.KindEndpointSlice} {
			m.counters.Clashes.WithLabelValues(r.Name, kind)
		}
	}
	return c
}

// enqueueRemote enqueues every selected Service of a remote whose caches have just synced.
func (c *Controller) enqueueRemote(r *multiremote.Remote) {
	services, _ := c.remotes[r.Name].Services.List(labels.Everything())
	for _, s := range services {
		c.base.Queue.Add(mirror.Source{Cluster: r.Name, Namespace: s.Namespace, Name: s.Name})
	}
}

func (c *Controller) enqueueMirrors(match func(mirror.Source) bool) {
	services, _ := c.write.ServiceCache.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		if s, ok := mirror.SourceOf(svc.Labels); ok && ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) && match(s) {
			c.base.Queue.Add(s)
		}
	}
	c.base.EnqueueIndexed(c.write.SliceCache, match)
}

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable does not hold up the others: each remote syncs on its own, and until it has,
// its mirrors are neither updated nor garbage-collected.
func (c *Controller) Run(ctx context.Context, workers int) { c.base.Run(ctx, workers) }

// RemoteCaches are what the controller holds of remote, as cached (trimmed): its selected
// Services and its EndpointSlices; nil when remote is not configured. For inspection.
func (c *Controller) RemoteCaches(remote string) *caches.Selected { return c.remotes[remote] }

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Controller) ResyncRemotes() { c.base.ResyncRemotes() }
