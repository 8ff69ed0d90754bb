// Package apply writes the local Services and EndpointSlices of the service mirror, mirrors
// and global services alike: only what differs from the cache, each write counted and
// expected, never an object we do not own, deletes preconditioned on the object we looked at;
// and holds back the endpoints of a remote that it may not publish or that are withdrawn.
package apply

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// errStale says a cache does not show our last write yet; the sync is retried once it does.
var errStale = errors.New("cache does not show our last write yet")

// Kinds of the objects written, the kind label of the write and clash metrics.
const (
	KindService       = "Service"
	KindEndpointSlice = "EndpointSlice"
)

// Config is what the controllers of the service mirror share to write their local objects:
// where, and what holds back the endpoints of a remote.
type Config struct {
	// Namespace is the local namespace that holds every mirror and global Service.
	Namespace string
	// MirrorNamespace are the informers of Namespace, shared by the controllers.
	MirrorNamespace *caches.MirrorNamespace
	// Withdraw says which remotes' endpoints are withdrawn (nil: none ever are).
	Withdraw *withdraw.Tracker
	// Guard refuses the endpoint addresses a remote may not publish (nil: the rules alone), and
	// Refusals reports them, each once.
	Guard    *addrguard.Guard
	Refusals *addrguard.Reporter
	// Adopter takes over what the original tool made (nil: never).
	Adopter *adopt.Adopter
}

// Rules are what differs between the objects of the controllers.
type Rules[K comparable] struct {
	// UpdateService says how an existing Service must change to match the desired one.
	UpdateService func(desired, actual *corev1.Service) (mirror.Change, *corev1.Service)
	// Clash reports a local object that has the name of one of ours but is not ours; it is
	// left alone.
	Clash func(key K, obj runtime.Object, m metav1.Object, kind string)
	// Adopt says whether a Service that is not ours but holds the name of key's is to be taken
	// over in place (the original tool's, with SEMAPHORE_ADOPT_ORIGINAL).
	Adopt func(key K, svc metav1.Object) bool
}

// Writer writes the local objects that stand for keys of type K into the mirror namespace.
type Writer[K comparable] struct {
	Config
	Rules[K]
	// ServiceCache and SliceCache are the caches of the mirror namespace, SliceCache indexed by the
	// controller's sources.
	ServiceCache corelisters.ServiceLister
	SliceCache   cache.Indexer

	base     *multiremote.Controller[K]
	services Kind[*corev1.Service]
	slices   Kind[*discoveryv1.EndpointSlice]
}

// NewWriter returns the Writer of the controller base: it indexes the slices of the mirror
// namespace by base's sources, has base handle the changes of its objects and wait for its
// caches before the workers start. Call it before the informers start.
func NewWriter[K comparable](base *multiremote.Controller[K], client kubernetes.Interface, cfg Config, rules Rules[K]) *Writer[K] {
	ns := cfg.MirrorNamespace
	utilruntime.Must(ns.Slices.Informer().AddIndexers(cache.Indexers{base.SourceIndex(): base.IndexBySource}))
	base.WatchLocal(ns.Factory, ns.Synced()...)
	_, _ = ns.Services.Informer().AddEventHandler(base.LocalHandler(serviceKey))
	_, _ = ns.Slices.Informer().AddEventHandler(base.LocalHandler(sliceKey))
	w := &Writer[K]{
		Config: cfg, Rules: rules,
		ServiceCache: ns.Services.Lister(), SliceCache: ns.Slices.Informer().GetIndexer(),
		base: base,
	}
	services, slices := client.CoreV1().Services(cfg.Namespace), client.DiscoveryV1().EndpointSlices(cfg.Namespace)
	w.services = Kind[*corev1.Service]{
		Name: KindService, Key: func(m metav1.Object) string { return serviceKey(m.GetName()) }, Change: rules.UpdateService,
		In: func(string) Client[*corev1.Service] { return services },
		Cached: func(_, name string) (*corev1.Service, bool, error) {
			svc, err := w.ServiceCache.Services(cfg.Namespace).Get(name)
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return svc, err == nil, err
		},
	}
	w.slices = Kind[*discoveryv1.EndpointSlice]{
		Name: KindEndpointSlice, Key: func(m metav1.Object) string { return sliceKey(m.GetName()) }, Change: mirror.UpdateEndpointSlice,
		In: func(string) Client[*discoveryv1.EndpointSlice] { return slices },
		Cached: func(_, name string) (*discoveryv1.EndpointSlice, bool, error) {
			obj, exists, err := w.SliceCache.GetByKey(cfg.Namespace + "/" + name)
			if !exists || err != nil {
				return nil, false, err
			}
			return obj.(*discoveryv1.EndpointSlice), true, nil
		},
	}
	return w
}

// Ours are the local slices of ours that stand for key.
func (w *Writer[K]) Ours(key K) ([]*discoveryv1.EndpointSlice, error) {
	return multiremote.Indexed[*discoveryv1.EndpointSlice](w.SliceCache, w.base.SourceIndex(), fmt.Sprint(key))
}

// HoldBack applies to desired, the copies of remote's slices of the Service named what, what
// holds back a remote's endpoints: the addresses it may not publish are left out (each
// reported once), and its endpoints are not ready while its outage policy withdraws them.
func (c Config) HoldBack(remote, what string, desired []*discoveryv1.EndpointSlice) {
	c.Refusals.Report(remote, what, mirror.Admit(desired, c.Guard.For(remote)))
	if c.Withdraw.Withdrawn(remote) {
		withdraw.Endpoints(desired)
	}
}

func (w *Writer[K]) ownedService(key K, svc *corev1.Service) bool {
	return w.owned(key, svc, KindService)
}

func (w *Writer[K]) ownedSlice(key K, s *discoveryv1.EndpointSlice) bool {
	return w.owned(key, s, KindEndpointSlice)
}

// serviceKey is the expectation key of our writes of the Service name.
func serviceKey(name string) string { return KindService + "/" + name }

// sliceKey is the expectation key of our writes of the EndpointSlice name.
func sliceKey(name string) string { return KindEndpointSlice + "/" + name }

// Service makes the local Service desired for key exist as desired. clashed is true when an
// object we do not own holds its name.
func (w *Writer[K]) Service(ctx context.Context, key K, desired *corev1.Service) (clashed bool, err error) {
	_, clashed, err = Put(ctx, w.base, w.ownedService, w.services, key, desired)
	return clashed, err
}

// DeleteService deletes a Service of ours, on the condition that it is still the object we
// looked at: a preconditioned delete never removes an object that replaced it meanwhile.
func (w *Writer[K]) DeleteService(ctx context.Context, svc *corev1.Service) error {
	return Remove(ctx, w.base, w.services, svc)
}

// Slices makes the local slices desired for key exist as desired, and deletes those of
// existing (ours, for key) that are not desired. clashed is true when an object we do not own
// holds the name of a desired slice.
func (w *Writer[K]) Slices(ctx context.Context, key K, desired, existing []*discoveryv1.EndpointSlice) (clashed bool, err error) {
	return PutAll(ctx, w.base, w.ownedSlice, w.slices, key, desired, existing)
}

// DeleteSlice deletes a slice of ours, on the condition that it is still the object we looked
// at.
func (w *Writer[K]) DeleteSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	return Remove(ctx, w.base, w.slices, s)
}

// Finish makes the local slices desired for key exist as desired, and deletes those of existing
// (ours, for key) that are not desired; once all of key's are written, it removes what the
// original tool made for service, the name of key's Service. It returns the result of the sync.
func (w *Writer[K]) Finish(ctx context.Context, key K, service string, desired, existing []*discoveryv1.EndpointSlice) (reconcile.Result, error) {
	clashed, err := w.Slices(ctx, key, desired, existing)
	if err == nil && !clashed {
		// Ours are written: what the original tool made for this Service can go.
		err = w.Adopter.RemoveLeftovers(ctx, service)
	}
	return w.Result(key, clashed, err)
}

// Result is the result of a sync that ended with clashed and err; a stale cache postpones key.
func (w *Writer[K]) Result(key K, clashed bool, err error) (reconcile.Result, error) {
	return Result(w.base, key, clashed, err)
}

// IsStale reports whether err says a cache does not show our last write yet: the sync is
// retried once it does.
func IsStale(err error) bool { return errors.Is(err, errStale) }

// Result is the result of base's sync of key that ended with clashed and err; a stale cache
// postpones key.
func Result[K comparable](base *multiremote.Controller[K], key K, clashed bool, err error) (reconcile.Result, error) {
	switch {
	case IsStale(err):
		return base.Stale(key)
	case err != nil:
		return reconcile.Error, err
	case clashed:
		return reconcile.Clash, nil
	}
	return reconcile.Success, nil
}
