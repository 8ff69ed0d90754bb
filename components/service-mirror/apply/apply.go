// Package apply writes the local Services and EndpointSlices of the service mirror, mirrors
// and global services alike: only what differs from the cache, each write counted and
// expected, never an object we do not own, deletes preconditioned on the object we looked at.
package apply

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// ErrStale says a cache does not show our last write yet; the sync is retried once it does.
var ErrStale = errors.New("cache does not show our last write yet")

// Kinds of the objects written, the kind label of the write and clash metrics.
const (
	KindService       = "Service"
	KindEndpointSlice = "EndpointSlice"
)

const fieldManager = ownership.ServiceMirror

// Writer writes the local objects that stand for keys of type K into one namespace.
type Writer[K comparable] struct {
	Base      *multiremote.Controller[K]
	Client    kubernetes.Interface
	Namespace string
	// ServiceCache and SliceCache are the local caches of the namespace (SliceCache may hold
	// other namespaces too).
	ServiceCache corelisters.ServiceLister
	SliceCache   cache.Indexer
	// UpdateService says how an existing Service must change to match the desired one.
	UpdateService func(desired, actual *corev1.Service) (mirror.Change, *corev1.Service)
	// Clash reports a local object that has the name of one of ours but is not ours; it is
	// left alone.
	Clash func(key K, obj runtime.Object, m metav1.Object, kind string)
	// Adopt, when set, says whether a Service that is not ours but holds the name of key's is
	// to be taken over in place (the original tool's, with SEMAPHORE_ADOPT_ORIGINAL).
	Adopt func(key K, svc metav1.Object) bool
}

// ServiceKey is the expectation key of our writes of the Service name.
func ServiceKey(name string) string { return KindService + "/" + name }

// SliceKey is the expectation key of our writes of the EndpointSlice name.
func SliceKey(name string) string { return KindEndpointSlice + "/" + name }

// owned reports whether obj is ours and stands for key; when it is not, the clash is reported.
func (w *Writer[K]) owned(key K, obj runtime.Object, m metav1.Object, kind string) bool {
	if w.Base.Owns(key, m) || (kind == KindService && w.Adopt != nil && w.Adopt(key, m)) {
		return true
	}
	w.Clash(key, obj, m, kind)
	return false
}

// Service makes the local Service desired for key exist as desired. clashed is true when an
// object we do not own holds its name.
func (w *Writer[K]) Service(ctx context.Context, key K, desired *corev1.Service) (clashed bool, err error) {
	expectKey := ServiceKey(desired.Name)
	actual, err := w.ServiceCache.Services(w.Namespace).Get(desired.Name)
	if apierrors.IsNotFound(err) {
		if !w.Base.Expect.Satisfied(expectKey, nil) {
			return false, ErrStale
		}
		return false, w.createService(ctx, desired)
	}
	if err != nil {
		return false, err
	}
	if !w.Base.Expect.Satisfied(expectKey, actual) {
		return false, ErrStale
	}
	if !w.owned(key, actual, actual, KindService) {
		return true, nil
	}
	change, next := w.UpdateService(desired, actual)
	switch change {
	case mirror.Update:
		out, err := w.Client.CoreV1().Services(w.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return false, w.Base.Wrote(expectKey, out, err, KindService, "update")
	case mirror.Recreate:
		if err := w.DeleteService(ctx, actual); err != nil {
			return false, err
		}
		return false, w.createService(ctx, desired)
	}
	return false, nil
}

func (w *Writer[K]) createService(ctx context.Context, svc *corev1.Service) error {
	out, err := w.Client.CoreV1().Services(w.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: fieldManager})
	return w.Base.Wrote(ServiceKey(svc.Name), out, err, KindService, "create")
}

// DeleteService deletes a Service of ours, on the condition that it is still the object we
// looked at: a preconditioned delete never removes an object that replaced it meanwhile.
func (w *Writer[K]) DeleteService(ctx context.Context, svc *corev1.Service) error {
	return w.Base.Delete(ctx, ServiceKey(svc.Name), svc, w.Client.CoreV1().Services(w.Namespace).Delete, KindService, "delete")
}

// Slices makes the local slices desired for key exist as desired, and deletes those of
// existing (ours, for key) that are not desired. clashed is true when an object we do not own
// holds the name of a desired slice.
func (w *Writer[K]) Slices(ctx context.Context, key K, desired, existing []*discoveryv1.EndpointSlice) (clashed bool, err error) {
	want := make(map[string]bool, len(desired))
	var errs []error
	for _, d := range desired {
		want[d.Name] = true
		c, err := w.slice(ctx, key, d)
		clashed = clashed || c
		errs = append(errs, err)
	}
	for _, s := range existing {
		if want[s.Name] {
			continue
		}
		if !w.Base.Expect.Satisfied(SliceKey(s.Name), s) {
			errs = append(errs, ErrStale)
			continue
		}
		errs = append(errs, w.DeleteSlice(ctx, s))
	}
	return clashed, errors.Join(errs...)
}

func (w *Writer[K]) slice(ctx context.Context, key K, desired *discoveryv1.EndpointSlice) (clashed bool, err error) {
	expectKey := SliceKey(desired.Name)
	obj, exists, err := w.SliceCache.GetByKey(w.Namespace + "/" + desired.Name)
	if err != nil {
		return false, err
	}
	if !exists {
		if !w.Base.Expect.Satisfied(expectKey, nil) {
			return false, ErrStale
		}
		return false, w.createSlice(ctx, desired)
	}
	actual := obj.(*discoveryv1.EndpointSlice)
	if !w.Base.Expect.Satisfied(expectKey, actual) {
		return false, ErrStale
	}
	if !w.owned(key, actual, actual, KindEndpointSlice) {
		return true, nil
	}
	change, next := mirror.UpdateEndpointSlice(desired, actual)
	switch change {
	case mirror.Update:
		out, err := w.Client.DiscoveryV1().EndpointSlices(w.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return false, w.Base.Wrote(expectKey, out, err, KindEndpointSlice, "update")
	case mirror.Recreate:
		if err := w.DeleteSlice(ctx, actual); err != nil {
			return false, err
		}
		return false, w.createSlice(ctx, desired)
	}
	return false, nil
}

func (w *Writer[K]) createSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	out, err := w.Client.DiscoveryV1().EndpointSlices(w.Namespace).Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager})
	return w.Base.Wrote(SliceKey(s.Name), out, err, KindEndpointSlice, "create")
}

// DeleteSlice deletes a slice of ours, on the condition that it is still the object we looked
// at.
func (w *Writer[K]) DeleteSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	return w.Base.Delete(ctx, SliceKey(s.Name), s, w.Client.DiscoveryV1().EndpointSlices(w.Namespace).Delete, KindEndpointSlice, "delete")
}

// Result is the result of a sync that ended with clashed and err; a stale cache postpones key.
func (w *Writer[K]) Result(key K, clashed bool, err error) (string, error) {
	switch {
	case errors.Is(err, ErrStale):
		return w.Base.Stale(key)
	case err != nil:
		return reconcile.Error, err
	case clashed:
		return reconcile.Clash, nil
	}
	return reconcile.Success, nil
}
