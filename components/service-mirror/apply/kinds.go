package apply

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

const fieldManager = ownership.ServiceMirror

// Object is a local object a writer writes: a Service, an EndpointSlice, a ServiceImport.
type Object interface {
	runtime.Object
	metav1.Object
}

// Kind is how a writer reads and writes the local objects of one kind.
type Kind[T Object] struct {
	// Name is the kind label of the write and clash metrics.
	Name string
	// Key is the expectation key of our writes of an object of this kind.
	Key func(m metav1.Object) string
	// Cached is the object namespace/name in the local cache, if there.
	Cached func(namespace, name string) (T, bool, error)
	// Change says how an existing object must change to match the desired one.
	Change func(desired, actual T) (mirror.Change, T)
	// In is the client that writes the objects of this kind in namespace.
	In func(namespace string) Client[T]
}

// Client writes the objects of one kind in one namespace, as client-go's typed clients do
// (CoreV1().Services(namespace), ...).
type Client[T Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Put makes the local object desired for key, of kind k, exist as desired, and returns it as
// the API server or the cache has it (the desired object itself when nothing was written yet).
// clashed is true when an object owned reports not to be ours holds its name; it is left alone.
func Put[K comparable, T Object](ctx context.Context, base *multiremote.Controller[K], owned func(K, T) bool, k Kind[T], key K, desired T) (out T, clashed bool, err error) {
	expectKey := k.Key(desired)
	actual, exists, err := k.Cached(desired.GetNamespace(), desired.GetName())
	if err != nil {
		return out, false, err
	}
	if !exists {
		if !base.Expect.Satisfied(expectKey, nil) {
			return out, false, errStale
		}
		return create(ctx, base, k, desired)
	}
	if !base.Expect.Satisfied(expectKey, actual) {
		return out, false, errStale
	}
	if !owned(key, actual) {
		return actual, true, nil
	}
	change, next := k.Change(desired, actual)
	switch change {
	case mirror.Update:
		out, err := k.In(next.GetNamespace()).Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return out, false, base.Wrote(expectKey, out, err, k.Name, "update")
	case mirror.Recreate:
		if err := Remove(ctx, base, k, actual); err != nil {
			return out, false, err
		}
		return create(ctx, base, k, desired)
	}
	return actual, false, nil
}

// PutAll makes the local objects desired for key, of kind k, exist as desired, and deletes those
// of existing (ours, for key) that are not desired. clashed is true when an object we do not
// own holds the name of a desired one.
func PutAll[K comparable, T Object](ctx context.Context, base *multiremote.Controller[K], owned func(K, T) bool, k Kind[T], key K, desired, existing []T) (clashed bool, err error) {
	want := make(map[string]bool, len(desired))
	var errs []error
	for _, d := range desired {
		want[d.GetName()] = true
		_, c, err := Put(ctx, base, owned, k, key, d)
		clashed = clashed || c
		errs = append(errs, err)
	}
	for _, obj := range existing {
		if want[obj.GetName()] {
			continue
		}
		if !base.Expect.Satisfied(k.Key(obj), obj) {
			errs = append(errs, errStale)
			continue
		}
		errs = append(errs, Remove(ctx, base, k, obj))
	}
	return clashed, errors.Join(errs...)
}

func create[K comparable, T Object](ctx context.Context, base *multiremote.Controller[K], k Kind[T], obj T) (T, bool, error) {
	out, err := k.In(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	return out, false, base.Wrote(k.Key(obj), out, err, k.Name, "create")
}

// Remove deletes obj, an object of ours, on the condition that it is still the object we
// looked at: a preconditioned delete never removes an object that replaced it meanwhile.
func Remove[K comparable, T Object](ctx context.Context, base *multiremote.Controller[K], k Kind[T], obj T) error {
	del := func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		return k.In(obj.GetNamespace()).Delete(ctx, name, opts)
	}
	return base.Delete(ctx, k.Key(obj), obj, del, k.Name, "delete")
}

// owned reports whether obj, of kind, is ours and stands for key; when it is not, the clash is
// reported.
func (w *Writer[K]) owned(key K, obj Object, kind string) bool {
	if w.base.Owns(key, obj) || (kind == KindService && w.Adopt != nil && w.Adopt(key, obj)) {
		return true
	}
	w.Clash(key, obj, obj, kind)
	return false
}

// NewCounters creates on f the counters of a controller whose unit of work belongs to no single
// remote and that writes local objects of kinds: its syncs of one (the unit, for their help),
// its write requests by kind and verb and the clashes by kind, whose help are writesHelp and
// clashesHelp; the latter two are exported at zero (initCounters).
func NewCounters(f *metrics.Factory, one, writesHelp, clashesHelp string, kinds ...string) multiremote.Counters {
	c := multiremote.Counters{
		Reconcile: reconcile.NewTotalMetrics(f, one),
		Writes:    f.CounterVec("writes_total", writesHelp, "kind", "verb"),
		Clashes:   f.CounterVec("clashes_total", clashesHelp, "kind"),
	}
	initCounters(c, kinds...)
	return c
}

// initCounters exports at zero, before the first write, the write counters of each of kinds
// (labelled kind and verb) by the verbs Put and Remove count, and its clash counter (labelled
// kind), so that dashboards and alerts see 0 rather than no data.
func initCounters(c multiremote.Counters, kinds ...string) {
	for _, kind := range kinds {
		c.Clashes.WithLabelValues(kind)
		for _, verb := range []string{"create", "update", "delete"} {
			c.Writes.WithLabelValues(kind, verb)
		}
	}
}
