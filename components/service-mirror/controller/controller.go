// Package controller keeps the local mirrors of remote Services in line with the remote
// clusters: shared informers on each remote and on the mirror namespace feed one rate-limited
// workqueue keyed by remote Service; each sync computes the desired objects with package
// mirror from the caches and writes only what differs.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
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

	"github.com/kube-semaphore/semaphore/components/internal/expectations"
	"github.com/kube-semaphore/semaphore/components/internal/labels"
	"github.com/kube-semaphore/semaphore/components/internal/remote"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
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

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	// clashes remembers, by local name, the sources whose mirror name is taken by an object
	// we do not own, so they are retried when that object goes away.
	clashMu sync.Mutex
	clashes map[string]mirror.Source

	expect *expectations.Expectations
}

type remoteCache struct {
	name string
	// Services are listed with the selector, slices without: two factories.
	factories []informers.SharedInformerFactory
	services  corelisters.ServiceLister
	slices    cache.Indexer
	synced    []cache.InformerSynced

	mu       sync.RWMutex
	isSynced bool
}

func (r *remoteCache) ready() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.isSynced
}

const (
	bySource      = "source"
	byServiceName = "service"
)

// New wires informers for the local mirror namespace and for each remote.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) *Controller {
	c := &Controller{
		opts:    opts,
		log:     log,
		local:   local,
		health:  health,
		metrics: m,
		remotes: map[string]*remoteCache{},
		clashes: map[string]mirror.Source{},
		expect:  expectations.New(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[mirror.Source](),
			workqueue.TypedRateLimitingQueueConfig[mirror.Source]{Name: "service_mirror", MetricsProvider: queueMetrics},
		),
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
		DeleteFunc: c.onLocal,
	}
	_, _ = svcInformer.Informer().AddEventHandler(localHandler)
	_, _ = sliceInformer.Informer().AddEventHandler(localHandler)

	for _, r := range remotes {
		c.remotes[r.Name] = c.newRemoteCache(r)
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
		AddFunc:    func(obj any) { c.onRemoteService(r.Name, obj) },
		UpdateFunc: func(_, obj any) { c.onRemoteService(r.Name, obj) },
		DeleteFunc: func(obj any) { c.onRemoteService(r.Name, obj) },
	})
	_, _ = sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onRemoteSlice(rc, obj) },
		UpdateFunc: func(_, obj any) { c.onRemoteSlice(rc, obj) },
		DeleteFunc: func(obj any) { c.onRemoteSlice(rc, obj) },
	})
	return rc
}

func indexBySource(obj any) ([]string, error) {
	m, err := metaOf(obj)
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
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if name := m.GetLabels()[discoveryv1.LabelServiceName]; name != "" {
		return []string{m.GetNamespace() + "/" + name}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return m, nil
}

func (c *Controller) onRemoteService(remoteName string, obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	c.queue.Add(mirror.Source{Cluster: remoteName, Namespace: m.GetNamespace(), Name: m.GetName()})
}

// onRemoteSlice enqueues the Service a remote slice belongs to, when that Service is selected.
func (c *Controller) onRemoteSlice(rc *remoteCache, obj any) {
	m, err := metaOf(obj)
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
	c.queue.Add(mirror.Source{Cluster: rc.name, Namespace: m.GetNamespace(), Name: name})
}

// onLocal enqueues the source of a changed mirror object (so a mirror someone edited or
// deleted is repaired), and the source waiting for a name held by an object we do not own.
func (c *Controller) onLocal(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if labels.IsManagedBy(m.GetLabels(), labels.ServiceMirror) {
		if s, ok := mirror.SourceOf(m.GetLabels()); ok {
			c.queue.Add(s)
		}
		return
	}
	c.clashMu.Lock()
	s, ok := c.clashes[m.GetName()]
	c.clashMu.Unlock()
	if ok {
		c.queue.Add(s)
	}
}

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable does not hold up the others: each remote syncs on its own, and until it has,
// its mirrors are neither updated nor garbage-collected.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.local.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()

	c.localFactory.Start(ctx.Done())
	defer c.localFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.localSynced...) {
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

	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	wg.Go(func() { wait.UntilWithContext(ctx, c.updateInventory, c.opts.DriftInterval) })
	<-ctx.Done()
	// Workers block in queue.Get until the queue shuts down; the deferred wg.Wait needs that.
	c.queue.ShutDown()
}

func (c *Controller) waitForRemote(ctx context.Context, rc *remoteCache) {
	if !cache.WaitForCacheSync(ctx.Done(), rc.synced...) {
		return
	}
	rc.mu.Lock()
	rc.isSynced = true
	rc.mu.Unlock()
	c.health.MarkSynced(rc.name)
	c.log.Info("remote caches synced", "remote", rc.name)
	// Every selected Service was enqueued by its add event; the mirrors are enqueued too so
	// those whose source went away while we were not watching are removed.
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

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	src, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(src)
	start := time.Now()
	result, err := c.sync(ctx, src)
	c.metrics.reconcileDuration.WithLabelValues(src.Cluster).Observe(time.Since(start).Seconds())
	c.metrics.reconciles.WithLabelValues(src.Cluster, result).Inc()
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("reconcile failed", "remote", src.Cluster, "namespace", src.Namespace, "name", src.Name, "err", err)
		}
		c.queue.AddRateLimited(src)
		return true
	}
	c.queue.Forget(src)
	return true
}
