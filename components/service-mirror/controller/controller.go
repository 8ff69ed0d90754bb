// Package controller keeps the local mirrors of remote Services in line with the remote
// clusters: shared informers on each remote and on the mirror namespace feed one rate-limited
// workqueue keyed by remote Service; each sync computes the desired objects with package
// mirror from the caches and writes only what differs.
package controller

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/expectations"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Options configure a Controller.
type Options struct {
	// Namespace is the local namespace that holds every mirror.
	Namespace string
	// Selector picks the remote Services to mirror.
	Selector k8slabels.Selector
	// ResyncPeriod re-reconciles every object periodically (0 disables).
	ResyncPeriod time.Duration
	// DriftInterval is how often the drift and inventory gauges are recomputed.
	DriftInterval time.Duration
}

// Controller mirrors remote Services into the local cluster.
type Controller struct {
	opts    Options
	log     *slog.Logger
	local   kubernetes.Interface
	health  *remote.Health
	metrics *Metrics

	localFactory  informers.SharedInformerFactory
	localServices corelisters.ServiceLister
	localSlices   cache.Indexer
	localSynced   []cache.InformerSynced

	remotes map[string]*remoteCache
	queue   workqueue.TypedRateLimitingInterface[mirror.Source]
	loop    *reconcile.Loop[mirror.Source]

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	clashes *reconcile.Clashes[mirror.Source]

	expect *expectations.Expectations
}

type remoteCache struct {
	name string
	// Services are listed with the selector, slices without: two factories.
	factories []informers.SharedInformerFactory
	services  corelisters.ServiceLister
	slices    cache.Indexer
	synced    []cache.InformerSynced

	ready atomic.Bool // the caches have synced
}

const (
	bySource      = "source"
	byServiceName = "service"
)

// New wires informers for the local mirror namespace and for each remote.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[mirror.Source](),
		workqueue.TypedRateLimitingQueueConfig[mirror.Source]{Name: "service_mirror", MetricsProvider: queueMetrics},
	)
	c := &Controller{
		opts:    opts,
		log:     log,
		local:   local,
		health:  health,
		metrics: m,
		remotes: map[string]*remoteCache{},
		clashes: reconcile.NewClashes[mirror.Source](),
		expect:  expectations.New(),
		queue:   queue,
	}
	c.loop = &reconcile.Loop[mirror.Source]{
		Queue:   queue,
		Sync:    c.sync,
		Remote:  func(s mirror.Source) string { return s.Cluster },
		Metrics: m.reconcile,
		Log:     log,
	}

	c.localFactory = informers.NewSharedInformerFactoryWithOptions(local, opts.ResyncPeriod, informers.WithNamespace(opts.Namespace))
	svcInformer := c.localFactory.Core().V1().Services()
	sliceInformer := c.localFactory.Discovery().V1().EndpointSlices()
	utilruntime.Must(sliceInformer.Informer().AddIndexers(cache.Indexers{bySource: indexBySource}))
	c.localServices = svcInformer.Lister()
	c.localSlices = sliceInformer.Informer().GetIndexer()
	c.localSynced = []cache.InformerSynced{svcInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced}
	localHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onLocal,
		UpdateFunc: func(_, obj any) { c.onLocal(obj) },
	}
	_, _ = svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    localHandler.AddFunc,
		UpdateFunc: localHandler.UpdateFunc,
		DeleteFunc: func(obj any) { c.onLocalDelete(kindService, obj) },
	})
	_, _ = sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    localHandler.AddFunc,
		UpdateFunc: localHandler.UpdateFunc,
		DeleteFunc: func(obj any) { c.onLocalDelete(kindEndpointSlice, obj) },
	})

	for _, r := range remotes {
		c.remotes[r.Name] = c.newRemoteCache(r)
		// Zero before the first sync, so that dashboards show 0 rather than no data.
		m.reconcile.InitRemote(r.Name)
		for _, kind := range []string{kindService, kindEndpointSlice} {
			m.clashes.WithLabelValues(r.Name, kind)
		}
	}

	c.broadcaster = record.NewBroadcaster()
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: labels.ServiceMirror})
	return c
}

func (c *Controller) newRemoteCache(r remote.Cluster) *remoteCache {
	rc := &remoteCache{name: r.Name}
	selector := c.opts.Selector.String()
	svcFactory := informers.NewSharedInformerFactoryWithOptions(r.Client, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	sliceFactory := informers.NewSharedInformerFactory(r.Client, c.opts.ResyncPeriod)
	rc.factories = []informers.SharedInformerFactory{svcFactory, sliceFactory}
	svcInformer := svcFactory.Core().V1().Services()
	sliceInformer := sliceFactory.Discovery().V1().EndpointSlices()
	utilruntime.Must(sliceInformer.Informer().AddIndexers(cache.Indexers{byServiceName: indexByServiceName}))
	rc.services = svcInformer.Lister()
	rc.slices = sliceInformer.Informer().GetIndexer()
	rc.synced = []cache.InformerSynced{svcInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced}

	_, _ = svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onRemoteService(rc, obj) },
		UpdateFunc: func(_, obj any) { c.onRemoteService(rc, obj) },
		DeleteFunc: func(obj any) { c.onRemoteService(rc, obj) },
	})
	_, _ = sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onRemoteSlice(rc, obj) },
		UpdateFunc: func(_, obj any) { c.onRemoteSlice(rc, obj) },
		DeleteFunc: func(obj any) { c.onRemoteSlice(rc, obj) },
	})
	return rc
}

func indexBySource(obj any) ([]string, error) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return nil, err
	}
	if !labels.IsManagedBy(m.GetLabels(), labels.ServiceMirror) {
		return nil, nil
	}
	if s, ok := mirror.SourceOf(m.GetLabels()); ok {
		return []string{s.String()}, nil
	}
	return nil, nil
}

func indexByServiceName(obj any) ([]string, error) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return nil, err
	}
	if name := m.GetLabels()[discoveryv1.LabelServiceName]; name != "" {
		return []string{m.GetNamespace() + "/" + name}, nil
	}
	return nil, nil
}

// onRemoteService enqueues a changed remote Service. Until the remote's caches have synced,
// events are not queued: waitForRemote enqueues everything the caches hold once they have.
func (c *Controller) onRemoteService(rc *remoteCache, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil || !rc.ready.Load() {
		return
	}
	c.queue.Add(mirror.Source{Cluster: rc.name, Namespace: m.GetNamespace(), Name: m.GetName()})
}

// onRemoteSlice enqueues the Service a remote slice belongs to, when that Service is selected.
func (c *Controller) onRemoteSlice(rc *remoteCache, obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil || !rc.ready.Load() {
		return
	}
	name := m.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return
	}
	if _, err := rc.services.Services(m.GetNamespace()).Get(name); err != nil {
		return
	}
	c.queue.Add(mirror.Source{Cluster: rc.name, Namespace: m.GetNamespace(), Name: name})
}

// onLocal enqueues the source of a changed mirror object (so a mirror someone edited or
// deleted is repaired), and the source waiting for a name held by an object we do not own.
func (c *Controller) onLocal(obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	if labels.IsManagedBy(m.GetLabels(), labels.ServiceMirror) {
		if s, ok := mirror.SourceOf(m.GetLabels()); ok {
			c.queue.Add(s)
		}
	}
	// Also when the holder is a mirror of another source whose name coincides.
	if s, ok := c.clashes.Waiting(m.GetName()); ok {
		c.queue.Add(s)
	}
}

// onLocalDelete is onLocal for a deletion, which also settles our expectation of the object:
// a mirror deleted before our cache saw our write of it will never show that write.
func (c *Controller) onLocalDelete(kind string, obj any) {
	if m, err := reconcile.MetaOf(obj); err == nil {
		c.expect.ObservedDeletion(kind+"/"+m.GetName(), m.GetResourceVersion())
	}
	c.onLocal(obj)
}

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable does not hold up the others: each remote syncs on its own, and until it has,
// its mirrors are neither updated nor garbage-collected.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()

	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.local.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()

	c.localFactory.Start(ctx.Done())
	defer c.localFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.localSynced...) {
		c.queue.ShutDown()
		return
	}
	c.log.Info("local caches synced", "namespace", c.opts.Namespace)

	var wg sync.WaitGroup
	defer wg.Wait()
	for _, rc := range c.remotes {
		for _, f := range rc.factories {
			f.Start(ctx.Done())
			defer f.Shutdown()
		}
		wg.Go(func() { c.waitForRemote(ctx, rc) })
	}
	// Mirrors of remotes no longer configured are garbage-collected straight away.
	c.enqueueMirrors(func(s mirror.Source) bool { return c.remotes[s.Cluster] == nil })

	wg.Go(func() { wait.UntilWithContext(ctx, c.updateInventory, c.opts.DriftInterval) })
	c.loop.Run(ctx, workers)
}

func (c *Controller) waitForRemote(ctx context.Context, rc *remoteCache) {
	if !cache.WaitForCacheSync(ctx.Done(), rc.synced...) {
		return
	}
	rc.ready.Store(true)
	c.health.MarkSynced(rc.name)
	c.log.Info("remote caches synced", "remote", rc.name)
	// Every selected Service, and the mirrors too, so that those whose source went away while
	// we were not watching are removed. Events from here on are queued by the handlers.
	services, _ := rc.services.List(k8slabels.Everything())
	for _, s := range services {
		c.queue.Add(mirror.Source{Cluster: rc.name, Namespace: s.Namespace, Name: s.Name})
	}
	c.enqueueMirrors(func(s mirror.Source) bool { return s.Cluster == rc.name })
}

// LocalSynced reports whether the local caches have synced, for /readyz.
func (c *Controller) LocalSynced() bool {
	for _, s := range c.localSynced {
		if !s() {
			return false
		}
	}
	return true
}

func (c *Controller) enqueueMirrors(match func(mirror.Source) bool) {
	services, _ := c.localServices.Services(c.opts.Namespace).List(k8slabels.Everything())
	for _, svc := range services {
		if s, ok := mirror.SourceOf(svc.Labels); ok && labels.IsManagedBy(svc.Labels, labels.ServiceMirror) && match(s) {
			c.queue.Add(s)
		}
	}
	for _, key := range c.localSlices.ListIndexFuncValues(bySource) {
		objs, _ := c.localSlices.ByIndex(bySource, key)
		for _, o := range objs {
			if s, ok := mirror.SourceOf(o.(*discoveryv1.EndpointSlice).Labels); ok && match(s) {
				c.queue.Add(s)
			}
		}
	}
}
