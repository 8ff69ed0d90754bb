// Package trimtest checks informer transforms (cache.TransformFunc) the way informers use them:
// more than once on the same object, and on tombstones.
package trimtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"
)

// Apply returns f applied to obj, failing t on an error, and checks that applying f again to
// the result changes nothing: an informer may transform an object more than once (a re-list
// of what it caches).
func Apply(t testing.TB, f cache.TransformFunc, obj any) any {
	t.Helper()
	out, err := f(obj)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out, again); diff != "" {
		t.Errorf("not idempotent (-once +twice):\n%s", diff)
	}
	return out
}

// PassTombstone checks that each of fs hands a tombstone of obj over unchanged: anything else an
// informer hands over passes.
func PassTombstone(t testing.TB, obj any, fs ...cache.TransformFunc) {
	t.Helper()
	tomb := cache.DeletedFinalStateUnknown{Key: "app/x", Obj: obj}
	for _, f := range fs {
		if out, err := f(tomb); err != nil || !cmp.Equal(out, tomb) {
			t.Errorf("a tombstone changed: %v, %v", out, err)
		}
	}
}
