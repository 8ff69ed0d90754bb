// Package mcscontroller serves the Multi-Cluster Services API in the local cluster: informers on
// every cluster's ServiceExports, Services and EndpointSlices (the local cluster's and each
// remote's) and on the local ServiceImports, derived Services, imported slices and Namespaces
// feed one workqueue keyed by exported Service; each sync merges the clusters' exports with
// package mcs, writes only what differs of the ServiceImport, its derived Service and slices
// in the Service's own namespace, and the conditions of the local ServiceExport.
package mcscontroller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	mcsinformers "sigs.k8s.io/mcs-api/pkg/client/informers/externalversions"
	mcslisters "sigs.k8s.io/mcs-api/pkg/client/listers/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// Options configure a Controller.
type Options struct {
	// Config holds back remote endpoints as for mirrors (Guard, Refusals, Withdraw); its
	// Namespace is not used: the objects of an exported Service live in its own namespace.
	apply.Config
	// LocalCluster is the name of the local cluster, as the remotes know it: the source-cluster
	// of the local cluster's own exported endpoints.
	LocalCluster string
	// ResyncPeriod re-lists every informer periodically (0 disables).
	ResyncPeriod time.Duration
	// InventoryInterval is how often the inventory gauges are recomputed.
	InventoryInterval time.Duration
	// RemoteSlices are the remotes' EndpointSlice informers, shared with the mirrors.
	RemoteSlices *caches.RemoteSlices
	// Zones are the local Nodes' zones, which the hints of local-first imports follow.
	Zones *caches.Zones
	// ClusterIDInterval is how often every cluster's ID (its ClusterProperty) is read again.
	ClusterIDInterval time.Duration
}

// Controller serves ServiceImports for every Service exported in any cluster of the clusterset.
type Controller struct {
	base    *multiremote.Controller[mcs.Key]
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	exports mcsclient.Interface

	// clusters are the local cluster and the remotes, by name; ids their IDs.
	clusters map[string]*cluster
	ids      *clusterIDs
	// ours are the local objects we write, our slices indexed by exported Service.
	ours struct {
		imports    mcslisters.ServiceImportLister
		services   corelisters.ServiceLister
		slices     cache.Indexer
		namespaces corelisters.NamespaceLister
	}
	imports  apply.Kind[*mcsv1beta1.ServiceImport]
	services apply.Kind[*corev1.Service]
	slices   apply.Kind[*discoveryv1.EndpointSlice]
	// discovery asks the local cluster whether it serves the API.
	discovery discovery.DiscoveryInterface
	// running is set once the API is served and the informers start; started is when.
	running atomic.Bool
	started time.Time
}

// cluster is what the controller reads of one cluster: its ServiceExports, its Services and its
// EndpointSlices (indexed by Service), all trimmed but the exports.
type cluster struct {
	name string
	// remote is nil for the local cluster, whose caches synced before any sync runs.
	remote   *multiremote.Remote
	exports  mcslisters.ServiceExportLister
	services corelisters.ServiceLister
	slices   cache.Indexer
}

func (c *cluster) ready() bool { return c.remote == nil || c.remote.Ready() }

// New wires informers for the local cluster, whose configuration is localConfig, and each
// remote; every cluster is read with an MCS client and a dynamic one (its ID) made from its
// configuration.
func New(opts Options, local kubernetes.Interface, localConfig *rest.Config, remotes []remote.Cluster, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) (*Controller, error) {
	exports, err := NewClient(localConfig)
	if err != nil {
		return nil, err
	}
	names := []string{opts.LocalCluster}
	for _, r := range remotes {
		names = append(names, r.Name)
	}
	c := &Controller{opts: opts, log: log, metrics: m, exports: exports, discovery: local.Discovery(), clusters: map[string]*cluster{}, ids: newClusterIDs(names)}
	c.base = multiremote.New(multiremote.Config[mcs.Key]{
		Queue:             "service_mirror_mcs",
		QueueMetrics:      queueMetrics,
		Sync:              c.sync,
		Remote:            func(mcs.Key) string { return "" },
		Counters:          m.counters,
		Health:            health,
		Log:               log,
		OnRemoteSynced:    c.enqueueRemote,
		Component:         ownership.ServiceMirror,
		SourceOf:          mcs.KeyOf,
		SourceIndex:       "mcs-source",
		EnqueueLocal:      c.enqueueOurs,
		LocalLog:          []any{"mcs", true},
		Namespaced:        true,
		Events:            local,
		Inventory:         c.updateInventory,
		InventoryInterval: opts.InventoryInterval,
	})
	if err := c.watchLocal(local, localConfig, exports); err != nil {
		return nil, err
	}
	c.base.WatchLocal(opts.Zones.Factory, opts.Zones.Synced)
	opts.Zones.OnChange(func() { c.enqueueOurs(func(mcs.Key) bool { return true }) })
	if opts.Withdraw != nil {
		// A remote's endpoints withdrawn, or back: every import holding them changes.
		opts.Withdraw.OnChange(func(string) { c.enqueueOurs(func(mcs.Key) bool { return true }) })
	}
	for _, r := range remotes {
		client, err := NewClient(r.Config)
		if err != nil {
			return nil, err
		}
		if err := c.watchRemote(r, client); err != nil {
			return nil, err
		}
	}
	for name := range c.clusters {
		m.initCluster(name)
	}
	return c, nil
}

// NewClient is an MCS client made from cfg, a component's client configuration: the API's types
// are served as JSON only, where the component's clients ask for protobuf.
func NewClient(cfg *rest.Config) (mcsclient.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	return mcsclient.NewForConfig(cfg)
}

// watchLocal adds the local informers: what the local cluster exports (its ServiceExports, and
// its Services and slices trimmed as a remote's), what we write (ServiceImports, and the
// Services and slices our labels select, whole but their managedFields) and the Namespaces.
func (c *Controller) watchLocal(local kubernetes.Interface, localConfig *rest.Config, exports mcsclient.Interface) error {
	resync := c.opts.ResyncPeriod
	sources := informers.NewSharedInformerFactoryWithOptions(local, resync, informers.WithTransform(trimSource))
	ours := informers.NewSharedInformerFactoryWithOptions(local, resync, informers.WithTransform(trim.ManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = oursSelector() }))
	api := mcsinformers.NewSharedInformerFactoryWithOptions(exports, resync, mcsinformers.WithTransform(trim.ManagedFields))

	localCluster := &cluster{name: c.opts.LocalCluster, exports: api.Multicluster().V1beta1().ServiceExports().Lister()}
	c.clusters[localCluster.name] = localCluster
	sourceServices, sourceSlices := sources.Core().V1().Services(), sources.Discovery().V1().EndpointSlices()
	utilruntime.Must(sourceSlices.Informer().AddIndexers(cache.Indexers{mirror.ByServiceName: mirror.IndexByServiceName}))
	localCluster.services, localCluster.slices = sourceServices.Lister(), sourceSlices.Informer().GetIndexer()
	namespaces := sources.Core().V1().Namespaces()
	ourSlices, imports := ours.Discovery().V1().EndpointSlices(), api.Multicluster().V1beta1().ServiceImports()
	utilruntime.Must(ourSlices.Informer().AddIndexers(cache.Indexers{c.base.SourceIndex(): c.base.IndexBySource}))
	c.ours.imports, c.ours.services, c.ours.slices = imports.Lister(), ours.Core().V1().Services().Lister(), ourSlices.Informer().GetIndexer()
	c.ours.namespaces = namespaces.Lister()
	c.kinds(local, exports)

	exported := api.Multicluster().V1beta1().ServiceExports().Informer()
	c.base.WatchLocal(sources, sourceServices.Informer().HasSynced, sourceSlices.Informer().HasSynced, namespaces.Informer().HasSynced)
	c.base.WatchLocal(ours, ours.Core().V1().Services().Informer().HasSynced, ourSlices.Informer().HasSynced)
	c.base.WatchLocal(api, exported.HasSynced, imports.Informer().HasSynced)
	_, _ = exported.AddEventHandler(handler(c.onExport))
	_, _ = sourceServices.Informer().AddEventHandler(handler(c.onService))
	_, _ = sourceSlices.Informer().AddEventHandler(handler(c.onSlice))
	_, _ = namespaces.Informer().AddEventHandler(handler(c.onNamespace))
	_, _ = imports.Informer().AddEventHandler(c.base.LocalHandler(expectKey(kindServiceImport)))
	_, _ = ours.Core().V1().Services().Informer().AddEventHandler(c.base.LocalHandler(expectKey(apply.KindService)))
	_, _ = ourSlices.Informer().AddEventHandler(c.base.LocalHandler(expectKey(apply.KindEndpointSlice)))
	id, err := c.clusterIDReader(c.opts.LocalCluster, localConfig)
	if err != nil {
		return err
	}
	c.base.WatchLocal(id, id.HasSynced)
	return nil
}

// watchRemote adds the informers of remote r: its ServiceExports, its Services (trimmed) and
// its slices (shared with the mirrors).
func (c *Controller) watchRemote(r remote.Cluster, exports mcsclient.Interface) error {
	base := c.base.AddRemote(r.Name)
	api := mcsinformers.NewSharedInformerFactoryWithOptions(exports, c.opts.ResyncPeriod, mcsinformers.WithTransform(trim.ManagedFields))
	services := informers.NewSharedInformerFactoryWithOptions(r.Client, c.opts.ResyncPeriod, informers.WithTransform(caches.TrimService))
	sliceFactory, slices := c.opts.RemoteSlices.For(r)
	exported, svcs := api.Multicluster().V1beta1().ServiceExports().Informer(), services.Core().V1().Services()
	c.clusters[r.Name] = &cluster{name: r.Name, remote: base, exports: api.Multicluster().V1beta1().ServiceExports().Lister(),
		services: svcs.Lister(), slices: slices.GetIndexer()}
	_, _ = exported.AddEventHandler(base.Handler(c.onExport))
	_, _ = svcs.Informer().AddEventHandler(base.Handler(c.onService))
	_, _ = slices.AddEventHandler(base.Handler(c.onSlice))
	base.Watch(api, exported.HasSynced)
	base.Watch(services, svcs.Informer().HasSynced)
	base.Watch(sliceFactory, slices.HasSynced)
	id, err := c.clusterIDReader(r.Name, r.Config)
	if err != nil {
		return err
	}
	base.Watch(id, id.HasSynced)
	return nil
}

// clusterIDReader reads the ID cluster claims; a new claim resolves every cluster's ID again
// (onClusterID).
func (c *Controller) clusterIDReader(cluster string, cfg *rest.Config) (*clusterIDReader, error) {
	return newClusterIDReader(cluster, cfg, c.opts.ClusterIDInterval, c.log, c.onClusterID)
}

// onClusterID resolves the IDs of the clusters with the claim of cluster. When an ID changed, the
// source-cluster labels of that cluster's imported slices change: every import is synced again.
func (c *Controller) onClusterID(cluster, claim string) {
	refusals, changed := c.ids.set(cluster, claim)
	for name, reason := range refusals {
		c.log.Error("cluster ID refused: the cluster's imported endpoints carry its name as their source cluster", "cluster", name, "reason", reason)
	}
	for name := range c.clusters {
		c.metrics.idRefused.WithLabelValues(name).Set(metrics.Bool(c.ids.refused(name)))
	}
	if changed {
		c.log.Info("cluster ID", "cluster", cluster, "id", c.ids.of(cluster))
		c.enqueueOurs(func(mcs.Key) bool { return true })
	}
}

// oursSelector selects the local Services and slices we make for exported Services.
func oursSelector() string {
	managed, _ := labels.NewRequirement(ownership.ManagedBy, selection.Equals, []string{ownership.ServiceMirror})
	ns, _ := labels.NewRequirement(mcs.LabelNamespace, selection.Exists, nil)
	return labels.NewSelector().Add(*managed, *ns).String()
}

// trimSource trims what the local cluster exports as a remote's: Services and slices alike.
func trimSource(obj any) (any, error) {
	switch obj.(type) {
	case *corev1.Service:
		return caches.TrimService(obj)
	case *discoveryv1.EndpointSlice:
		return caches.TrimSlice(obj)
	}
	return trim.ManagedFields(obj)
}

// handler calls fn with the object of every add, update (the new object) and delete.
func handler(fn func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: fn, UpdateFunc: func(_, obj any) { fn(obj) }, DeleteFunc: fn}
}

// onExport enqueues the Service a ServiceExport of any cluster exports.
func (c *Controller) onExport(obj any) {
	if m, err := reconcile.MetaOf(obj); err == nil {
		c.base.Queue.Add(mcs.Key{Namespace: m.GetNamespace(), Name: m.GetName()})
	}
}

// onService enqueues a Service of any cluster that some cluster exports; ours never are.
func (c *Controller) onService(obj any) {
	if m, err := reconcile.MetaOf(obj); err == nil && !ownership.IsManagedBy(m.GetLabels(), ownership.ServiceMirror) {
		c.enqueueExported(mcs.Key{Namespace: m.GetNamespace(), Name: m.GetName()})
	}
}

// onSlice enqueues the Service of a slice of any cluster, when some cluster exports it.
func (c *Controller) onSlice(obj any) {
	if m, err := reconcile.MetaOf(obj); err == nil && m.GetLabels()[discoveryv1.LabelServiceName] != "" {
		c.enqueueExported(mcs.Key{Namespace: m.GetNamespace(), Name: m.GetLabels()[discoveryv1.LabelServiceName]})
	}
}

// enqueueExported enqueues k when a cluster has a ServiceExport of it.
func (c *Controller) enqueueExported(k mcs.Key) {
	for _, cl := range c.clusters {
		if _, err := cl.exports.ServiceExports(k.Namespace).Get(k.Name); err == nil {
			c.base.Queue.Add(k)
			return
		}
	}
}

// onNamespace enqueues every Service any cluster exports from a local namespace that was
// created, or changed (began terminating): its imports appear, or stop being written.
func (c *Controller) onNamespace(obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	for _, cl := range c.clusters {
		exported, _ := cl.exports.ServiceExports(m.GetName()).List(labels.Everything())
		for _, e := range exported {
			c.base.Queue.Add(mcs.Key{Namespace: e.Namespace, Name: e.Name})
		}
	}
}

// enqueueRemote enqueues every Service a remote exports once its caches synced, and every one we
// serve: the remote may have unexported some while we were not watching.
func (c *Controller) enqueueRemote(r *multiremote.Remote) {
	exported, _ := c.clusters[r.Name].exports.List(labels.Everything())
	for _, e := range exported {
		c.base.Queue.Add(mcs.Key{Namespace: e.Namespace, Name: e.Name})
	}
	c.enqueueOurs(func(mcs.Key) bool { return true })
}

// enqueueOurs enqueues the exported Service of every local object of ours that matches.
func (c *Controller) enqueueOurs(match func(mcs.Key) bool) {
	imports, _ := c.ours.imports.List(labels.Everything())
	for _, si := range imports {
		if k, ok := mcs.KeyOf(si.Labels); ok && match(k) {
			c.base.Queue.Add(k)
		}
	}
	c.base.EnqueueIndexed(c.ours.slices, match)
}

// Run waits until the local cluster serves the Multi-Cluster Services API, then starts the
// informers and workers and blocks until ctx is done. Without the API (its CRDs not installed)
// nothing else of the service mirror waits: the mirrors and global services run, readiness
// does not depend on it, and the controller starts once the CRDs are installed.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !c.waitForAPI(ctx) {
		return
	}
	c.started = time.Now()
	c.running.Store(true)
	c.base.Run(ctx, workers)
}

// apiPollInterval is how often the local cluster is asked whether it serves the API, until it does.
const apiPollInterval = 30 * time.Second

// waitForAPI returns once the local cluster serves ServiceExports and ServiceImports, false
// when ctx is done first; it reports the wait once, and in the api_served gauge.
func (c *Controller) waitForAPI(ctx context.Context) bool {
	reported := false
	for {
		err := c.apiServed()
		if err == nil {
			c.metrics.apiServed.Set(1)
			return true
		}
		c.metrics.apiServed.Set(0)
		if !reported {
			c.log.Error("the local cluster does not serve the Multi-Cluster Services API (multicluster.x-k8s.io/v1beta1); ServiceExports are not served until its CRDs are installed (the chart's crds/), or turn it off with SEMAPHORE_MCS_ENABLED=false",
				"err", err, "retry", apiPollInterval)
			reported = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(apiPollInterval):
		}
	}
}

// apiServed is nil when the local cluster serves both resources of the API.
func (c *Controller) apiServed() error {
	list, err := c.discovery.ServerResourcesForGroupVersion(mcsv1beta1.GroupVersion.String())
	if err != nil {
		return err
	}
	want := map[string]bool{"serviceexports": true, "serviceimports": true}
	for _, r := range list.APIResources {
		delete(want, r.Name)
	}
	if len(want) > 0 {
		return fmt.Errorf("resources not served: %v", slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// LocalSynced reports whether the local caches have synced, for /readyz: while the local
// cluster does not serve the API, there is nothing to wait for.
func (c *Controller) LocalSynced() bool { return !c.running.Load() || c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Controller) ResyncRemotes() { c.base.ResyncRemotes() }
