// Package controller keeps one Calico GlobalNetworkSet per labelled group of remote pods:
// informers on each remote's labelled pods and on the local sets feed one rate-limited
// workqueue keyed by set; each sync computes the set's nets with package netset from the
// caches and writes only what differs. Several pod changes to one set coalesce into one write.
package controller

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// Options configure a NetworkSets.
type Options struct {
	// PodLabel is the label whose value names a remote pod's set.
	PodLabel string
	// API is the Calico API group the sets are written to (calico.APIv3 or calico.APICRD).
	API      string
	Resource schema.GroupVersionResource
	// ResyncPeriod re-reconciles every object periodically (0 disables).
	ResyncPeriod time.Duration
	// InventoryInterval is how often the inventory gauges are recomputed.
	InventoryInterval time.Duration
	// AdoptOriginal takes over, in place, the sets the original semaphore-policy made for our
	// remotes (netset.MadeByOriginal); without it they are name clashes, left alone.
	AdoptOriginal bool
	// Guard refuses the pod addresses a remote may not put into a set; nil holds every remote
	// to the rules alone (no special or metadata address).
	Guard *addrguard.Guard
	// MaxSetsPerRemote is the number of sets one remote's pods may make: of those with an
	// address, the first by name are made, the others left out (0: no limit).
	MaxSetsPerRemote int
	// MaxSetMembers is the number of addresses in one set: the first by address go in, the
	// others are left out (0: no limit).
	MaxSetMembers int
}

// NetworkSets turns labelled remote pods into GlobalNetworkSets.
type NetworkSets struct {
	base    *multiremote.Controller[netset.Source]
	opts    Options
	log     *slog.Logger
	sets    dynamic.ResourceInterface
	metrics *Metrics

	localSets cache.Indexer
	remotes   map[string]*remoteCache
	// refusals logs and counts each address refused for a set once.
	refusals *addrguard.Reporter
}

type remoteCache struct {
	*multiremote.Remote
	pods   cache.Indexer
	limits *limits
}

const bySet = "set"

// New wires informers for the local sets and for each remote's labelled pods.
func New(opts Options, local kubernetes.Interface, dyn dynamic.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *NetworkSets {
	c := &NetworkSets{opts: opts, log: log, sets: dyn.Resource(opts.Resource), metrics: m, remotes: map[string]*remoteCache{},
		refusals: addrguard.NewReporter(m.refused, log)}
	c.base = multiremote.New(multiremote.Config[netset.Source]{
		Queue:             "policy",
		QueueMetrics:      queueMetrics,
		Sync:              c.sync,
		Remote:            func(s netset.Source) string { return s.Cluster },
		Counters:          m.counters,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.Policy,
		SourceOf:          netset.SourceOf,
		EnqueueLocal:      func(match func(netset.Source) bool) { c.base.EnqueueIndexed(c.localSets, match) },
		LocalLog:          []any{"resource", opts.Resource.String()},
		Events:            local,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.InventoryInterval,
	})
	localFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.ResyncPeriod)
	setInformer := localFactory.ForResource(opts.Resource).Informer()
	// Sets the Calico API server stored keep their labels in an annotation when read
	// through crd.projectcalico.org/v1 (calico.LiftLabels).
	utilruntime.Must(setInformer.SetTransform(func(obj any) (any, error) {
		obj, _ = trim.ManagedFields(obj)
		return calico.LiftLabels(obj)
	}))
	utilruntime.Must(setInformer.AddIndexers(cache.Indexers{multiremote.BySource: c.base.IndexBySource}))
	c.localSets = setInformer.GetIndexer()
	c.base.WatchLocal(localFactory, setInformer.HasSynced)
	_, _ = setInformer.AddEventHandler(c.base.LocalHandler(func(name string) string { return name }))
	for _, r := range remotes {
		c.remotes[r.Name] = c.newRemoteCache(r)
		// Zero before the first sync, so that dashboards show 0 rather than no data.
		m.counters.Clashes.WithLabelValues(r.Name)
		m.adopted.WithLabelValues(r.Name)
	}
	return c
}

func (c *NetworkSets) newRemoteCache(r remote.Cluster) *remoteCache {
	rc := &remoteCache{Remote: c.base.AddRemote(r.Name),
		limits: newLimits(r.Name, orUnlimited(c.opts.MaxSetsPerRemote), orUnlimited(c.opts.MaxSetMembers), c.metrics.overLimit)}
	factory := informers.NewSharedInformerFactoryWithOptions(r.Client, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.opts.PodLabel }))
	podInformer := factory.Core().V1().Pods().Informer()
	// Only what the sets need is kept of each pod: a remote with thousands of pods costs little.
	utilruntime.Must(podInformer.SetTransform(trim.RemotePod))
	utilruntime.Must(podInformer.AddIndexers(cache.Indexers{bySet: c.indexBySet}))
	rc.pods = podInformer.GetIndexer()
	rc.Watch(factory, podInformer.HasSynced)
	enqueue := func(obj any) {
		if rc.Ready() {
			c.onRemotePod(rc, obj)
		}
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			// A pod whose label changed leaves its old set and joins the new one.
			enqueue(old)
			enqueue(obj)
		},
		DeleteFunc: enqueue,
	})
	return rc
}

func (c *NetworkSets) indexBySet(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if v := p.Labels[c.opts.PodLabel]; v != "" {
		return []string{p.Namespace + "/" + v}, nil
	}
	return nil, nil
}

// onRemotePod enqueues the set of a changed pod.
func (c *NetworkSets) onRemotePod(rc *remoteCache, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	if v := m.GetLabels()[c.opts.PodLabel]; v != "" {
		c.base.Queue.Add(netset.Source{Cluster: rc.Name, Namespace: m.GetNamespace(), Name: v})
	}
}

// enqueueRemote enqueues every set of a remote whose cache has just synced.
func (c *NetworkSets) enqueueRemote(r *multiremote.Remote) {
	for _, key := range c.remotes[r.Name].pods.ListIndexFuncValues(bySet) {
		c.base.Queue.Add(sourceOfKey(r.Name, key))
	}
	if c.opts.AdoptOriginal {
		c.enqueueOriginals(r.Name)
	}
}

// enqueueOriginals enqueues every set the original semaphore-policy made for remote: those no
// pod stands for any more are adopted to be deleted, not left behind. (Ours are enqueued by
// their index; the original's are not ours, so the index leaves them out.)
func (c *NetworkSets) enqueueOriginals(remote string) {
	for _, obj := range c.localSets.List() {
		m, err := reconcile.MetaOf(obj)
		if err != nil {
			continue
		}
		if src, ok := netset.MadeByOriginal(m.GetLabels()); ok && src.Cluster == remote {
			c.base.Queue.Add(src)
		}
	}
}

// CachedPod is what the cache keeps of a remote pod: only what sets are made of.
func (c *NetworkSets) CachedPod(remote, namespace, name string) (*corev1.Pod, bool) {
	rc := c.remotes[remote]
	if rc == nil {
		return nil, false
	}
	obj, ok, _ := rc.pods.GetByKey(namespace + "/" + name)
	if !ok {
		return nil, false
	}
	p, ok := obj.(*corev1.Pod)
	return p, ok
}

// Run starts the informers and workers and blocks until ctx is done. Each remote syncs on its
// own; until it has, its sets are neither updated nor deleted.
func (c *NetworkSets) Run(ctx context.Context, workers int) { c.base.Run(ctx, workers) }

// LocalSynced reports whether the local cache has synced, for /readyz.
func (c *NetworkSets) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *NetworkSets) ResyncRemotes() { c.base.ResyncRemotes() }
