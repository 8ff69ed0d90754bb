package expectations

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// obj is a cached object at resourceVersion rv.
func obj(rv string) metav1.Object {
	return &metav1.ObjectMeta{Name: "set", ResourceVersion: rv}
}

// step is one look at the cache: the cached object (nil when absent) and what Satisfied
// should say.
type step struct {
	cached metav1.Object
	want   bool
}

func TestSatisfied(t *testing.T) {
	tests := []struct {
		name   string
		expect func(e *Tracker)
		steps  []step
	}{
		{
			name:   "no expectation, object cached",
			expect: func(*Tracker) {},
			steps:  []step{{obj("5"), true}},
		},
		{
			name:   "no expectation, object absent",
			expect: func(*Tracker) {},
			steps:  []step{{nil, true}},
		},
		{
			name:   "wrote, cache still empty (a create not seen yet)",
			expect: func(e *Tracker) { e.Wrote("set", "10") },
			steps:  []step{{nil, false}, {nil, false}, {obj("10"), true}},
		},
		{
			name:   "wrote, cache older",
			expect: func(e *Tracker) { e.Wrote("set", "10") },
			steps:  []step{{obj("9"), false}, {obj("9"), false}},
		},
		{
			name:   "wrote, cache at our version, then forgotten",
			expect: func(e *Tracker) { e.Wrote("set", "10") },
			// Once satisfied the expectation is gone: an older cache no longer waits.
			steps: []step{{obj("10"), true}, {obj("9"), true}, {nil, true}},
		},
		{
			name:   "wrote, cache newer",
			expect: func(e *Tracker) { e.Wrote("set", "10") },
			steps:  []step{{obj("11"), true}, {obj("9"), true}},
		},
		{
			name:   "wrote, resourceVersions compared as numbers",
			expect: func(e *Tracker) { e.Wrote("set", "100") },
			steps:  []step{{obj("99"), false}, {obj("1000"), true}},
		},
		{
			name:   "wrote twice, the later write counts",
			expect: func(e *Tracker) { e.Wrote("set", "10"); e.Wrote("set", "12") },
			steps:  []step{{obj("10"), false}, {obj("11"), false}, {obj("12"), true}},
		},
		{
			name:   "deleted, cache still shows the object at that version",
			expect: func(e *Tracker) { e.Deleted("set", "10") },
			steps:  []step{{obj("10"), false}, {obj("10"), false}},
		},
		{
			name:   "deleted, cache shows an older version",
			expect: func(e *Tracker) { e.Deleted("set", "10") },
			steps:  []step{{obj("9"), false}},
		},
		{
			name:   "deleted, object absent, then forgotten",
			expect: func(e *Tracker) { e.Deleted("set", "10") },
			steps:  []step{{nil, true}, {obj("10"), true}},
		},
		{
			name:   "deleted, recreated since",
			expect: func(e *Tracker) { e.Deleted("set", "10") },
			steps:  []step{{obj("15"), true}, {obj("10"), true}},
		},
		{
			name:   "wrote then deleted, the delete counts",
			expect: func(e *Tracker) { e.Wrote("set", "10"); e.Deleted("set", "10") },
			steps:  []step{{obj("10"), false}, {nil, true}},
		},
		{
			name:   "deleted then created again, the create counts",
			expect: func(e *Tracker) { e.Deleted("set", "10"); e.Wrote("set", "11") },
			steps:  []step{{nil, false}, {obj("10"), false}, {obj("11"), true}},
		},
		{
			name:   "expectation on another key",
			expect: func(e *Tracker) { e.Wrote("other", "10") },
			steps:  []step{{obj("9"), true}, {nil, true}},
		},
		{
			// A resourceVersion that is not a number cannot be ordered: do not wait forever.
			name:   "unorderable resourceVersion",
			expect: func(e *Tracker) { e.Wrote("set", "10") },
			steps:  []step{{obj("abc"), true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New()
			tt.expect(e)
			for i, s := range tt.steps {
				if got := e.Satisfied("set", s.cached); got != s.want {
					rv := "<absent>"
					if s.cached != nil {
						rv = s.cached.GetResourceVersion()
					}
					t.Errorf("step %d: Satisfied(cache at %s) = %v, want %v", i, rv, got, s.want)
				}
			}
		})
	}
}

func TestSatisfiedAfterTimeout(t *testing.T) {
	e := New()
	e.Wrote("set", "10")
	e.m["set"] = expectation{resourceVersion: "10", at: time.Now().Add(-timeout - time.Second)}
	if !e.Satisfied("set", obj("9")) {
		t.Error("Satisfied with an older cache after timeout = false, want true (the event never came)")
	}
	if _, ok := e.m["set"]; ok {
		t.Error("expectation kept after it timed out")
	}

	e.Deleted("set", "10")
	e.m["set"] = expectation{resourceVersion: "10", deleted: true, at: time.Now().Add(-timeout - time.Second)}
	if !e.Satisfied("set", obj("10")) {
		t.Error("Satisfied after a delete and timeout = false, want true")
	}
}

func TestExpire(t *testing.T) {
	e := New()
	old := time.Now().Add(-timeout - time.Second)
	e.m["old-write"] = expectation{resourceVersion: "1", at: old}
	e.m["old-delete"] = expectation{resourceVersion: "2", deleted: true, at: old}
	e.Wrote("new-write", "3")
	e.Deleted("new-delete", "4")

	e.Expire()

	got := map[string]bool{}
	for k := range e.m {
		got[k] = true
	}
	want := map[string]bool{"new-write": true, "new-delete": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expectations kept by Expire mismatch (-want +got):\n%s", diff)
	}
	// What is left still waits.
	if e.Satisfied("new-write", obj("2")) {
		t.Error("Satisfied(new-write, older cache) = true after Expire, want false")
	}
	if e.Satisfied("new-delete", obj("4")) {
		t.Error("Satisfied(new-delete, cache at the deleted version) = true after Expire, want false")
	}
}

func TestConcurrentUse(t *testing.T) {
	e := New()
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 1000 {
				e.Wrote("set", "10")
				e.Satisfied("set", obj("10"))
				e.Deleted("other", "5")
				if i%100 == 0 {
					e.Expire()
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// A set we wrote and someone deleted before our cache saw the write never shows that write:
// seeing its deletion settles the expectation, so the next sync recreates it at once instead
// of waiting for timeout. A deletion of an older version does not.
func TestObservedDeletion(t *testing.T) {
	e := New()
	e.Wrote("set", "10")
	e.ObservedDeletion("set", "9")
	if e.Satisfied("set", nil) {
		t.Fatal("deletion of an older version settled the expectation of version 10")
	}
	e.ObservedDeletion("set", "10")
	if !e.Satisfied("set", nil) {
		t.Fatal("deletion of the version we wrote did not settle the expectation")
	}

	e.Deleted("gone", "7")
	e.ObservedDeletion("gone", "7")
	if !e.Satisfied("gone", nil) {
		t.Fatal("an expected deletion is not satisfied by the object being gone")
	}
}
