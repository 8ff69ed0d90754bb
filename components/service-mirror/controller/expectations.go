package controller

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// expectations remember the writes this controller made until its informer caches show them.
//
// Informer caches lag behind writes by a few milliseconds. A sync that runs in that window (a
// remote change arriving right after we created a slice, say) would otherwise act on the old
// state: create an object that exists, or update with an old resourceVersion, and fail. Such a
// sync waits instead; the watch event of our own write enqueues the source again.
type expectations struct {
	mu sync.Mutex
	m  map[string]expectation
}

type expectation struct {
	resourceVersion string // of the object we wrote, or of the one we deleted
	deleted         bool
	at              time.Time
}

// expectationTimeout bounds how long a sync waits for the cache, should the event of our write
// never come (the object changed again in a way we cannot order).
const expectationTimeout = 30 * time.Second

func newExpectations() *expectations {
	return &expectations{m: map[string]expectation{}}
}

func (e *expectations) wrote(key, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = expectation{resourceVersion: resourceVersion, at: time.Now()}
}

func (e *expectations) deleted(key, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = expectation{resourceVersion: resourceVersion, deleted: true, at: time.Now()}
}

// satisfied reports whether the cached object (nil when absent) reflects our last write of key.
func (e *expectations) satisfied(key string, cached metav1.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return true
	}
	done := time.Since(exp.at) > expectationTimeout
	if !done && cached != nil {
		cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), exp.resourceVersion)
		// After a write the cache must hold our version or a later one; after a delete the
		// object must be gone or replaced by a later one.
		done = err != nil || cmp > 0 || (cmp == 0 && !exp.deleted)
	}
	if !done && cached == nil {
		done = exp.deleted
	}
	if done {
		delete(e.m, key)
	}
	return done
}

// expire forgets expectations older than expectationTimeout, so those of objects that are
// never looked at again (a deleted mirror) do not accumulate.
func (e *expectations) expire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, exp := range e.m {
		if time.Since(exp.at) > expectationTimeout {
			delete(e.m, k)
		}
	}
}
