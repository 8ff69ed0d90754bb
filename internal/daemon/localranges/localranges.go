// Package localranges keeps an addrguard.Guard's local ranges up to date from the local
// cluster: every Node's pod CIDRs and addresses, the Service ranges (ServiceCIDR objects) and,
// where Calico's IPAM runs, its IPAM blocks. No remote address may fall in any of them, whatever
// the remote's configured ranges say.
package localranges

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// Sources of local ranges: the source label of the local_ranges metric and the guard's source.
const (
	SourceNodes        = "nodes"
	SourceServiceCIDRs = "service_cidrs"
	SourceCalicoBlocks = "calico_ipam_blocks"
)

// calicoBlocks is Calico's IPAM block resource; its spec.cidr is a range of local pod addresses.
var calicoBlocks = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamblocks"}

// NewMetric is the gauge of how many local ranges each source holds.
func NewMetric(f *metrics.Factory) *prometheus.GaugeVec {
	return f.GaugeVec("local_ranges", "Ranges of the local cluster no remote address may fall in, by source: nodes (their pod CIDRs and addresses), service_cidrs, calico_ipam_blocks", "source")
}

// source is one informer whose objects' ranges are one source of the guard's local ranges.
type source struct {
	name     string
	informer cache.SharedIndexInformer
	ranges   func(obj any) []netip.Prefix
}

// settle is how long the watcher waits after a change of the local ranges before it tells
// OnChange's functions, so that Nodes coming and going together cost one resync, not one each.
const settle = 2 * time.Second

// Watcher feeds a guard the local ranges of every source the local API server serves.
type Watcher struct {
	guard   *addrguard.Guard
	gauge   *prometheus.GaugeVec
	log     *slog.Logger
	sources []source
	changed chan struct{} // a change not told yet; buffered, one is enough

	mu       sync.Mutex
	last     map[string][]netip.Prefix // by source
	onChange []func()
}

// New returns a watcher of the local cluster's ranges for guard. Which sources exist is asked of
// the API server once: a cluster without ServiceCIDR objects (before Kubernetes 1.33) or
// without Calico's IPAM blocks has no such source, which is logged.
func New(client kubernetes.Interface, dyn dynamic.Interface, guard *addrguard.Guard, gauge *prometheus.GaugeVec, resync time.Duration, log *slog.Logger) (*Watcher, error) {
	w := &Watcher{guard: guard, gauge: gauge, log: log, changed: make(chan struct{}, 1), last: map[string][]netip.Prefix{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(keepRanges))
	w.sources = append(w.sources, source{SourceNodes, factory.Core().V1().Nodes().Informer(), nodeRanges})
	served, err := servedResources(client.Discovery())
	if err != nil {
		return nil, fmt.Errorf("asking the local API server which resources it serves: %w", err)
	}
	if served[networkingv1.SchemeGroupVersion.WithResource("servicecidrs")] {
		w.sources = append(w.sources, source{SourceServiceCIDRs, factory.Networking().V1().ServiceCIDRs().Informer(), serviceCIDRRanges})
	} else {
		log.Warn("the local API server serves no ServiceCIDR objects (networking.k8s.io/v1, Kubernetes 1.33 and later): the Service range is not among the local ranges a remote address may not fall in")
	}
	if served[calicoBlocks] {
		dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, metav1.NamespaceAll, nil)
		informer := dynFactory.ForResource(calicoBlocks).Informer()
		if err := informer.SetTransform(keepBlockCIDR); err != nil {
			return nil, err
		}
		w.sources = append(w.sources, source{SourceCalicoBlocks, informer, blockRanges})
	}
	for _, s := range w.sources {
		if _, err := s.informer.AddEventHandler(w.handler(s)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// servedResources are the resources of the groups this package reads that the server serves.
func servedResources(d discovery.DiscoveryInterface) (map[schema.GroupVersionResource]bool, error) {
	served := map[schema.GroupVersionResource]bool{}
	for _, gv := range []schema.GroupVersion{networkingv1.SchemeGroupVersion, calicoBlocks.GroupVersion()} {
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		for _, r := range list.APIResources {
			served[gv.WithResource(r.Name)] = true
		}
	}
	return served, nil
}

// OnChange adds f to what is called, once the watcher has synced, when the local ranges
// changed: what the guard refused may be admitted now, and what it admitted refused, so a
// controller reconciles again what it made of the remotes.
func (w *Watcher) OnChange(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onChange = append(w.onChange, f)
}

// Run runs the informers until ctx is done, and tells OnChange's functions of every change
// once it has settled.
func (w *Watcher) Run(ctx context.Context) {
	for _, s := range w.sources {
		go s.informer.Run(ctx.Done())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
		if !w.Synced() {
			continue // the first read, before anything was admitted
		}
		w.mu.Lock()
		fs := slices.Clone(w.onChange)
		w.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}
}

// Synced reports whether every source has been read once: until then the guard does not know
// the local ranges, and nothing a remote publishes may be let through.
func (w *Watcher) Synced() bool {
	for _, s := range w.sources {
		if !s.informer.HasSynced() {
			return false
		}
	}
	return true
}

// handler recomputes a source's ranges from its informer's store whenever an object's ranges
// change: the store is the truth, so a missed or reordered event cannot leave a range behind.
func (w *Watcher) handler(s source) cache.ResourceEventHandler {
	update := func() {
		var all []netip.Prefix
		for _, obj := range s.informer.GetStore().List() {
			all = append(all, s.ranges(obj)...)
		}
		slices.SortFunc(all, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		all = slices.Compact(all)
		w.mu.Lock()
		before, seen := w.last[s.name]
		same := seen && slices.Equal(before, all)
		w.last[s.name] = all
		w.mu.Unlock()
		w.guard.SetLocal(s.name, all)
		w.gauge.WithLabelValues(s.name).Set(float64(len(all)))
		if !same {
			select {
			case w.changed <- struct{}{}:
			default: // one not told yet already stands for this one
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { update() },
		UpdateFunc: func(old, updated any) {
			if !slices.Equal(s.ranges(old), s.ranges(updated)) {
				update()
			}
		},
		DeleteFunc: func(any) { update() },
	}
}

// nodeRanges are a Node's pod CIDRs and its addresses, each as a single-address prefix.
func nodeRanges(obj any) []netip.Prefix {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil
	}
	out := prefixes(n.Spec.PodCIDRs)
	for _, a := range n.Status.Addresses {
		if addr, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
		}
	}
	return out
}

// serviceCIDRRanges are a ServiceCIDR's ranges.
func serviceCIDRRanges(obj any) []netip.Prefix {
	s, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return nil
	}
	return prefixes(s.Spec.CIDRs)
}

// prefixes are the ranges of cidrs that parse, masked.
func prefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// blockRanges is an IPAM block's range.
func blockRanges(obj any) []netip.Prefix {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	cidr, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
	if p, err := netip.ParsePrefix(cidr); err == nil {
		return []netip.Prefix{p.Masked()}
	}
	return nil
}
