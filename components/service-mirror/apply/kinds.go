package apply

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

const fieldManager = ownership.ServiceMirror

// object is a local object the Writer writes: a Service or an EndpointSlice.
type object interface {
	runtime.Object
	metav1.Object
}

// kind is how a Writer reads and writes the objects of one kind in its namespace.
type kind[T object] struct {
	// name is the kind label of the write and clash metrics.
	name string
	// key is the expectation key of our writes of the object name.
	key func(name string) string
	// cached is the object name in the local cache, if there.
	cached func(name string) (T, bool, error)
	// change says how an existing object must change to match the desired one.
	change func(desired, actual T) (mirror.Change, T)
	create func(context.Context, T, metav1.CreateOptions) (T, error)
	update func(context.Context, T, metav1.UpdateOptions) (T, error)
	delete func(context.Context, string, metav1.DeleteOptions) error
}

// put makes the local object desired for key, of kind k, exist as desired. clashed is true when
// an object we do not own holds its name.
func put[K comparable, T object](ctx context.Context, w *Writer[K], k kind[T], key K, desired T) (clashed bool, err error) {
	expectKey := k.key(desired.GetName())
	actual, exists, err := k.cached(desired.GetName())
	if err != nil {
		return false, err
	}
	if !exists {
		if !w.base.Expect.Satisfied(expectKey, nil) {
			return false, errStale
		}
		return false, create(ctx, w, k, desired)
	}
	if !w.base.Expect.Satisfied(expectKey, actual) {
		return false, errStale
	}
	if !w.owned(key, actual, k.name) {
		return true, nil
	}
	change, next := k.change(desired, actual)
	switch change {
	case mirror.Update:
		out, err := k.update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return false, w.base.Wrote(expectKey, out, err, k.name, "update")
	case mirror.Recreate:
		if err := remove(ctx, w, k, actual); err != nil {
			return false, err
		}
		return false, create(ctx, w, k, desired)
	}
	return false, nil
}

func create[K comparable, T object](ctx context.Context, w *Writer[K], k kind[T], obj T) error {
	out, err := k.create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	return w.base.Wrote(k.key(obj.GetName()), out, err, k.name, "create")
}

// remove deletes obj, an object of ours, on the condition that it is still the object we looked
// at: a preconditioned delete never removes an object that replaced it meanwhile.
func remove[K comparable, T object](ctx context.Context, w *Writer[K], k kind[T], obj T) error {
	return w.base.Delete(ctx, k.key(obj.GetName()), obj, k.delete, k.name, "delete")
}

// owned reports whether obj, of kind, is ours and stands for key; when it is not, the clash is
// reported.
func (w *Writer[K]) owned(key K, obj object, kind string) bool {
	if w.base.Owns(key, obj) || (kind == KindService && w.Adopt != nil && w.Adopt(key, obj)) {
		return true
	}
	w.Clash(key, obj, obj, kind)
	return false
}
