package multiremote

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// Factory is a factory of shared informers: informers.SharedInformerFactory and
// dynamicinformer.DynamicSharedInformerFactory both are.
type Factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// Remote is one remote cluster's informers. Until they have all synced it is not Ready: we do
// not know what the remote holds, so a sync neither updates nor deletes what stands for its
// objects, and its handlers drop events (every object is enqueued once it has synced).
type Remote struct {
	Name      string
	factories []Factory
	synced    []cache.InformerSynced
	ready     atomic.Bool
}

// Watch adds a factory of the remote's informers; synced tell when they have synced.
func (r *Remote) Watch(f Factory, synced ...cache.InformerSynced) {
	r.factories = append(r.factories, f)
	r.synced = append(r.synced, synced...)
}

// Ready reports whether the remote's caches have synced.
func (r *Remote) Ready() bool { return r.ready.Load() }

// Handler calls fn with the object of every add, update (the new object) and delete once the
// remote is Ready.
func (r *Remote) Handler(fn func(obj any)) cache.ResourceEventHandler {
	ready := func(obj any) {
		if r.Ready() {
			fn(obj)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    ready,
		UpdateFunc: func(_, obj any) { ready(obj) },
		DeleteFunc: ready,
	}
}
