package multiremote

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// BySource is the default name of the index IndexBySource computes (Config.SourceIndex).
const BySource = "source"

// SourceIndex is the name of the index IndexBySource computes.
func (c *Controller[K]) SourceIndex() string {
	if c.cfg.SourceIndex == "" {
		return BySource
	}
	return c.cfg.SourceIndex
}

// IndexBySource indexes a local object of ours by its source (fmt.Sprint of the key); other
// objects are not indexed.
func (c *Controller[K]) IndexBySource(obj any) ([]string, error) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return nil, err
	}
	if s, ok := c.sourceOf(m); ok {
		return []string{fmt.Sprint(s)}, nil
	}
	return nil, nil
}

// sourceOf is the source of a local object of ours.
func (c *Controller[K]) sourceOf(m metav1.Object) (K, bool) {
	if !ownership.IsManagedBy(m.GetLabels(), c.cfg.Component) {
		var zero K
		return zero, false
	}
	return c.cfg.SourceOf(m.GetLabels())
}

// EnqueueIndexed adds the source of every object in indexer's SourceIndex that matches.
func (c *Controller[K]) EnqueueIndexed(indexer cache.Indexer, match func(K) bool) {
	for _, key := range indexer.ListIndexFuncValues(c.SourceIndex()) {
		objs, _ := indexer.ByIndex(c.SourceIndex(), key)
		for _, o := range objs {
			m, err := reconcile.MetaOf(o)
			if err != nil {
				continue
			}
			if s, ok := c.cfg.SourceOf(m.GetLabels()); ok && match(s) {
				c.Queue.Add(s)
			}
		}
	}
}

// LocalHandler handles the local objects the controller writes. A change of one of ours
// enqueues its source, so an object someone edited or deleted is repaired; a change of any
// enqueues the source waiting for its name (Clashes), also when the holder is ours but stands
// for another source whose name coincides. A deletion also settles our expectation of the
// object, under expectKey of its ObjectName: an object deleted before our cache saw our write of it
// will never show that write.
func (c *Controller[K]) LocalHandler(expectKey func(name string) string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onLocal,
		UpdateFunc: func(_, obj any) { c.onLocal(obj) },
		DeleteFunc: func(obj any) {
			if m, err := reconcile.MetaOf(obj); err == nil {
				c.Expect.ObservedDeletion(expectKey(c.ObjectName(m)), m.GetResourceVersion())
			}
			c.onLocal(obj)
		},
	}
}

func (c *Controller[K]) onLocal(obj any) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return
	}
	if s, ok := c.sourceOf(m); ok {
		c.Queue.Add(s)
	}
	if s, ok := c.Clashes.Waiting(c.ObjectName(m)); ok {
		c.Queue.Add(s)
	}
}

// ObjectName is the name a local object is known by in clashes and expectations: its name, or
// namespace/name for a controller whose objects are in many namespaces (Config.Namespaced).
func (c *Controller[K]) ObjectName(m metav1.Object) string {
	if c.cfg.Namespaced {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return m.GetName()
}

// Owns reports whether a local object is ours and stands for src, and then drops any clash
// src had on its name. When it does not, the caller reports the clash and leaves it alone.
func (c *Controller[K]) Owns(src K, m metav1.Object) bool {
	if s, ok := c.sourceOf(m); ok && s == src {
		c.Clashes.Resolve(c.ObjectName(m), src)
		return true
	}
	return false
}

// Indexed returns the objects of indexer under key in index, as T (the indexer's type).
func Indexed[T any](indexer cache.Indexer, index, key string) ([]T, error) {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(T))
	}
	return out, nil
}
