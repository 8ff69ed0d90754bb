// Package controller keeps one Calico GlobalNetworkSet per labelled group of remote pods:
// informers on each remote's labelled pods and on the local sets feed one rate-limited
// workqueue keyed by set; each sync computes the set's nets with package netset from the
// caches and writes only what differs. Several pod changes to one set coalesce into one write.
package controller

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/expectations"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Options configure a Controller.
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
}

// Controller turns labelled remote pods into GlobalNetworkSets.
type Controller struct {
	opts    Options
	log     *slog.Logger
	events  kubernetes.Interface
	sets    dynamic.ResourceInterface
	health  *remote.Health
	metrics *Metrics

	localFactory dynamicinformer.DynamicSharedInformerFactory
	localSets    cache.Indexer
	localSynced  cache.InformerSynced

	remotes map[string]*remoteCache
	queue   workqueue.TypedRateLimitingInterface[netset.Source]
	loop    *reconcile.Loop[netset.Source]

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	clashes *reconcile.Clashes[netset.Source]

	expect *expectations.Expectations
}

type remoteCache struct {
	name    string
	factory informers.SharedInformerFactory
	pods    cache.Indexer
	synced  cache.InformerSynced

	ready atomic.Bool // the cache has synced
}

const (
	bySource = "source"
	bySet    = "set"
)

// New wires informers for the local sets and for each remote's labelled pods.
func New(opts Options, local kubernetes.Interface, dyn dynamic.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[netset.Source](),
		workqueue.TypedRateLimitingQueueConfig[netset.Source]{Name: "policy", MetricsProvider: queueMetrics},
	)
	c := &Controller{
		opts:    opts,
		log:     log,
		events:  local,
		sets:    dyn.Resource(opts.Resource),
		health:  health,
		metrics: m,
		remotes: map[string]*remoteCache{},
		clashes: reconcile.NewClashes[netset.Source](),
		expect:  expectations.New(),
		queue:   queue,
	}
	c.loop = &reconcile.Loop[netset.Source]{
		Queue:   queue,
		Sync:    c.sync,
		Remote:  func(s netset.Source) string { return s.Cluster },
		Metrics: m.reconcile,
		Log:     log,
	}
	c.localFactory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.ResyncPeriod)
	setInformer := c.localFactory.ForResource(opts.Resource).Informer()
	utilruntime.Must(setInformer.AddIndexers(cache.Indexers{bySource: indexBySource}))
	c.localSets = setInformer.GetIndexer()
	c.localSynced = setInformer.HasSynced
	_, _ = setInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onLocal,
		UpdateFunc: func(_, obj any) { c.onLocal(obj) },
		DeleteFunc: c.onLocalDelete,
	})
	for _, r := range remotes {
		c.remotes[r.Name] = c.newRemoteCache(r)
		// Zero before the first sync, so that dashboards show 0 rather than no data.
		m.reconcile.InitRemote(r.Name)
		m.clashes.WithLabelValues(r.Name)
	}
	c.broadcaster = record.NewBroadcaster()
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: labels.Policy})
	return c
}

func (c *Controller) newRemoteCache(r remote.Cluster) *remoteCache {
	rc := &remoteCache{name: r.Name}
	rc.factory = informers.NewSharedInformerFactoryWithOptions(r.Client, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.opts.PodLabel }))
	podInformer := rc.factory.Core().V1().Pods().Informer()
	// Only what the sets need is kept of each pod: a remote with thousands of pods costs little.
	utilruntime.Must(podInformer.SetTransform(trimPod))
	utilruntime.Must(podInformer.AddIndexers(cache.Indexers{bySet: c.indexBySet}))
	rc.pods = podInformer.GetIndexer()
	rc.synced = podInformer.HasSynced
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.onRemotePod(rc, obj) },
		UpdateFunc: func(old, obj any) {
			// A pod whose label changed leaves its old set and joins the new one.
			c.onRemotePod(rc, old)
			c.onRemotePod(rc, obj)
		},
		DeleteFunc: func(obj any) { c.onRemotePod(rc, obj) },
	})
	return rc
}

// trimPod keeps of a pod only its name, namespace, labels, resourceVersion, phase and
// addresses.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: p.ResourceVersion, UID: p.UID},
		Status:     corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}, nil
}

func (c *Controller) indexBySet(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if v := p.Labels[c.opts.PodLabel]; v != "" {
		return []string{p.Namespace + "/" + v}, nil
	}
	return nil, nil
}

func indexBySource(obj any) ([]string, error) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return nil, err
	}
	if !labels.IsManagedBy(m.GetLabels(), labels.Policy) {
		return nil, nil
	}
	if s, ok := netset.SourceOf(m.GetLabels()); ok {
		return []string{s.String()}, nil
	}
	return nil, nil
}

// onRemotePod enqueues the set of a changed pod. Until the remote's cache has synced, events
// are not queued: waitForRemote enqueues every set the cache holds once it has.
func (c *Controller) onRemotePod(rc *remoteCache, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil || !rc.ready.Load() {
		return
	}
	if v := m.GetLabels()[c.opts.PodLabel]; v != "" {
		c.queue.Add(netset.Source{Cluster: rc.name, Namespace: m.GetNamespace(), Name: v})
	}
}

// onLocal enqueues the source of a changed set of ours (so a set someone edited or deleted is
// repaired), and the source waiting for a name held by a set we do not own.
func (c *Controller) onLocal(obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	if labels.IsManagedBy(m.GetLabels(), labels.Policy) {
		if s, ok := netset.SourceOf(m.GetLabels()); ok {
			c.queue.Add(s)
		}
	}
	// Also when the holder is a set of another source whose name coincides.
	if s, ok := c.clashes.Waiting(m.GetName()); ok {
		c.queue.Add(s)
	}
}

// onLocalDelete is onLocal for a deletion, which also settles our expectation of the set: a
// set deleted before our cache saw our write of it will never show that write.
func (c *Controller) onLocalDelete(obj any) {
	if m, err := reconcile.MetaOf(obj); err == nil {
		c.expect.ObservedDeletion(m.GetName(), m.GetResourceVersion())
	}
	c.onLocal(obj)
}

// Run starts the informers and workers and blocks until ctx is done. Each remote syncs on its
// own; until it has, its sets are neither updated nor deleted.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.events.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()

	c.localFactory.Start(ctx.Done())
	defer c.localFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.localSynced) {
		c.queue.ShutDown()
		return
	}
	c.log.Info("local caches synced", "resource", c.opts.Resource.String())

	var wg sync.WaitGroup
	defer wg.Wait()
	for _, rc := range c.remotes {
		rc.factory.Start(ctx.Done())
		defer rc.factory.Shutdown()
		wg.Go(func() { c.waitForRemote(ctx, rc) })
	}
	// Sets of remotes no longer configured are garbage-collected straight away.
	c.enqueueSets(func(s netset.Source) bool { return c.remotes[s.Cluster] == nil })

	wg.Go(func() { wait.UntilWithContext(ctx, c.updateInventory, c.opts.InventoryInterval) })
	c.loop.Run(ctx, workers)
}

func (c *Controller) waitForRemote(ctx context.Context, rc *remoteCache) {
	if !cache.WaitForCacheSync(ctx.Done(), rc.synced) {
		return
	}
	rc.ready.Store(true)
	c.health.MarkSynced(rc.name)
	c.log.Info("remote caches synced", "remote", rc.name)
	for _, key := range rc.pods.ListIndexFuncValues(bySet) {
		objs, _ := rc.pods.ByIndex(bySet, key)
		if len(objs) > 0 {
			p := objs[0].(*corev1.Pod)
			c.queue.Add(netset.Source{Cluster: rc.name, Namespace: p.Namespace, Name: p.Labels[c.opts.PodLabel]})
		}
	}
	c.enqueueSets(func(s netset.Source) bool { return s.Cluster == rc.name })
}

// LocalSynced reports whether the local cache has synced, for /readyz.
func (c *Controller) LocalSynced() bool { return c.localSynced() }

func (c *Controller) enqueueSets(match func(netset.Source) bool) {
	for _, key := range c.localSets.ListIndexFuncValues(bySource) {
		objs, _ := c.localSets.ByIndex(bySource, key)
		for _, o := range objs {
			m, err := reconcile.MetaOf(o)
			if err != nil {
				continue
			}
			if s, ok := netset.SourceOf(m.GetLabels()); ok && match(s) {
				c.queue.Add(s)
			}
		}
	}
}
