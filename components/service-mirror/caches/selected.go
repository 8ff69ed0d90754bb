package caches

import (
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Selected is what one controller of the service mirror reads of a remote cluster: the
// Services its selector picks, of which the first within its limit count, and the remote's
// EndpointSlices (shared with the other controller).
type Selected struct {
	*multiremote.Remote
	Services corelisters.ServiceLister
	Slices   cache.Indexer
	// Limited are the selected Services in order, of which the first count.
	Limited *limit.Set
}

// Selection says what a controller selects of each remote, and what it does with a change.
type Selection struct {
	Selector labels.Selector
	// Ignore, when set, says which selected Services take no place under the limit.
	Ignore func(metav1.Object) bool
	// Enqueue is called, once the remote is ready, with a selected Service whose object, slices
	// or admission under the limit changed.
	Enqueue func(limit.Key)
}

// Select watches, for the controller whose view of r is base, the Services of r that sel
// picks, and r's slices. The limit's handler sees every event, the remote ready or not; the
// remote is synced once it has seen every Service listed, too. Services are listed with the
// selector, slices without (and shared): two factories.
func (s *RemoteSlices) Select(base *multiremote.Remote, r remote.Cluster, limited *limit.Set, sel Selection) *Selected {
	svcFactory := SelectedServices(r.Client, sel.Selector, s.resync)
	sliceFactory, slices := s.For(r)
	services := svcFactory.Core().V1().Services()
	out := &Selected{Remote: base, Services: services.Lister(), Slices: slices.GetIndexer(), Limited: limited}
	admitted, err := services.Informer().AddEventHandler(limit.Handler(limited, sel.Ignore, func(k limit.Key) {
		if base.Ready() {
			sel.Enqueue(k)
		}
	}))
	utilruntime.Must(err)
	_, _ = slices.AddEventHandler(base.Handler(OnSlice(out.Services, sel.Enqueue)))
	base.Watch(svcFactory, services.Informer().HasSynced, admitted.HasSynced)
	base.Watch(sliceFactory, slices.HasSynced)
	return out
}

// SelectedServices is a factory of informers on the Services of client that selector picks,
// trimmed, re-listed every resync (0 disables).
func SelectedServices(client kubernetes.Interface, selector labels.Selector, resync time.Duration) informers.SharedInformerFactory {
	sel := selector.String()
	return informers.NewSharedInformerFactoryWithOptions(client, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
		informers.WithTransform(TrimService))
}

// OnSlice is the handler of a changed EndpointSlice: it calls enqueue with the Service the
// slice belongs to, when services holds it.
func OnSlice(services corelisters.ServiceLister, enqueue func(limit.Key)) func(obj any) {
	return func(obj any) {
		m, err := reconcile.MetaOf(obj)
		if err != nil {
			return
		}
		name := m.GetLabels()[discoveryv1.LabelServiceName]
		if name == "" {
			return
		}
		if _, err := services.Services(m.GetNamespace()).Get(name); err == nil {
			enqueue(limit.Key{Namespace: m.GetNamespace(), Name: name})
		}
	}
}
