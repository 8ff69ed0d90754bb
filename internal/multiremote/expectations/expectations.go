// Package expectations remembers a controller's own writes until its informer caches show them.
package expectations

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Tracker remembers the writes a controller made until its informer caches show them.
//
// Informer caches lag behind writes by a few milliseconds. A sync that runs in that window (a
// remote change arriving right after we created a slice, say) would otherwise act on the old
// state: create an object that exists, or update with an old resourceVersion, and fail. Such a
// sync waits instead; the watch event of our own write enqueues the source again.
type Tracker struct {
	mu sync.Mutex
	m  map[string]expectation
}

type expectation struct {
	resourceVersion string // of the object we wrote, or of the one we deleted
	deleted         bool
	at              time.Time
}

// timeout bounds how long a sync waits for the cache, should the event of our write
// never come (the object changed again in a way we cannot order).
const timeout = 30 * time.Second

// New returns a Tracker that expects nothing.
func New() *Tracker {
	return &Tracker{m: map[string]expectation{}}
}

// Wrote records that the controller created or updated key, which now has resourceVersion.
func (e *Tracker) Wrote(key, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = expectation{resourceVersion: resourceVersion, at: time.Now()}
}

// Deleted records that the controller deleted key, which had resourceVersion.
func (e *Tracker) Deleted(key, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = expectation{resourceVersion: resourceVersion, deleted: true, at: time.Now()}
}

// Satisfied reports whether the cached object (nil when absent) reflects our last write of key.
func (e *Tracker) Satisfied(key string, cached metav1.Object) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return true
	}
	done := time.Since(exp.at) > timeout
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

// ObservedDeletion is called when the informer sees key deleted at resourceVersion. If that is
// the object we wrote (or a later version of it), nothing will ever show our write again: the
// expectation is dropped rather than waited out.
func (e *Tracker) ObservedDeletion(key, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok || exp.deleted {
		return
	}
	if cmp, err := resourceversion.CompareResourceVersion(resourceVersion, exp.resourceVersion); err != nil || cmp >= 0 {
		delete(e.m, key)
	}
}

// Expire forgets expectations older than timeout, so those of objects that are never looked
// at again (a deleted object) do not accumulate.
func (e *Tracker) Expire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, exp := range e.m {
		if time.Since(exp.at) > timeout {
			delete(e.m, k)
		}
	}
}
