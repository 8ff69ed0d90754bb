package limit_test

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
)

func svc(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// newSet returns the Set of remote "aws" under a limit of most, and its PerRemote.
func newSet(t *testing.T, most int) (*limit.Set, *limit.PerRemote, func() float64, *bytes.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	var log bytes.Buffer
	l := limit.New(most, limit.WhatServices, "SEMAPHORE_TEST_LIMIT", limit.OverMetric(metrics.NewFactory(reg, "test")), slog.New(slog.NewTextHandler(&log, nil)))
	gauge := func() float64 {
		v, n := testenv.MetricSeries(t, reg, "test_over_limit", map[string]string{"remote": "aws", "what": limit.WhatServices})
		if n != 1 {
			t.Errorf("%d series of over_limit, want 1", n)
		}
		return v
	}
	return l.For("aws"), l, gauge, &log
}

// Whatever order the Services arrive in, the first in namespace then name order are admitted:
// "a/z" comes before "a-b/a", although "a-b/a" < "a/z" as strings.
func TestTheFirstInNamespaceNameOrderAreAdmittedWhateverTheArrival(t *testing.T) {
	ordered := []*corev1.Service{svc("a", "x"), svc("a", "z"), svc("a-b", "a"), svc("b", "a"), svc("b", "b")}
	for round := range 20 {
		set, _, _, _ := newSet(t, 3)
		h := limit.Handler(set, nil, func(limit.Key) {})
		arrival := slices.Clone(ordered)
		rand.New(rand.NewPCG(uint64(round), 1)).Shuffle(len(arrival), func(i, j int) { arrival[i], arrival[j] = arrival[j], arrival[i] })
		for _, s := range arrival {
			h.OnAdd(s, true)
		}
		for i, s := range ordered {
			want := limit.Admitted
			if i >= 3 {
				want = limit.Over
			}
			if got := set.Admission(limit.Key{Namespace: s.Namespace, Name: s.Name}); got != want {
				t.Errorf("arrival %v: %s/%s is %v, want %v", names(arrival), s.Namespace, s.Name, got, want)
			}
		}
	}
}

func names(svcs []*corev1.Service) []string {
	var out []string
	for _, s := range svcs {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}

// The handler reports the key of every event, and the one whose admission the event changed:
// pushed beyond the limit by a Service that sorts before it, let in when one before it goes.
// A Service that is ours takes no place; an update that makes it ours frees its place.
func TestHandlerReportsWhoseAdmissionChanged(t *testing.T) {
	set, _, _, _ := newSet(t, 2)
	var changed []string
	ours := func(m metav1.Object) bool { return m.GetLabels()["ours"] == "true" }
	h := limit.Handler(set, ours, func(k limit.Key) { changed = append(changed, k.Namespace+"/"+k.Name) })
	step := func(what string, do func(), want ...string) {
		t.Helper()
		changed = nil
		do()
		if !slices.Equal(changed, want) {
			t.Errorf("%s: changed %v, want %v", what, changed, want)
		}
	}
	step("add b", func() { h.OnAdd(svc("ns", "b"), false) }, "ns/b")
	step("add c", func() { h.OnAdd(svc("ns", "c"), false) }, "ns/c")
	step("add d, over", func() { h.OnAdd(svc("ns", "d"), false) }, "ns/d")
	step("add a, pushes c out", func() { h.OnAdd(svc("ns", "a"), false) }, "ns/a", "ns/c")
	step("resync of a", func() { h.OnUpdate(svc("ns", "a"), svc("ns", "a")) }, "ns/a")
	step("delete b, lets c in", func() { h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: svc("ns", "b")}) }, "ns/b", "ns/c")
	mine := svc("ns", "a")
	mine.Labels = map[string]string{"ours": "true"}
	step("a becomes ours, lets d in", func() { h.OnUpdate(svc("ns", "a"), mine) }, "ns/a", "ns/d")
	first := svc("ns", "0")
	first.Labels = mine.Labels
	step("ours added, takes no place", func() { h.OnAdd(first, false) }, "ns/0")
	for k, want := range map[string]limit.Admission{"a": limit.Unknown, "b": limit.Unknown, "c": limit.Admitted, "d": limit.Admitted} {
		if got := set.Admission(limit.Key{Namespace: "ns", Name: k}); got != want {
			t.Errorf("ns/%s is %v, want %v", k, got, want)
		}
	}
	var none *limit.Set
	changed = nil
	unlimited := limit.Handler(none, nil, func(k limit.Key) { changed = append(changed, k.Namespace+"/"+k.Name) })
	unlimited.OnAdd(svc("ns", "x"), false)
	unlimited.OnDelete(svc("ns", "x"))
	if none.Admission(limit.Key{Namespace: "ns", Name: "x"}) != limit.Admitted || len(changed) != 2 {
		t.Errorf("a nil Set does not admit everything, or its handler did not report both events: %v", changed)
	}
}

// Report sets the gauge to what is over the limit and logs a change once, however often it
// runs; a remote back within its limit is logged once too.
func TestReportLogsEachChangeOnce(t *testing.T) {
	set, l, gauge, log := newSet(t, 1)
	h := limit.Handler(set, nil, func(limit.Key) {})
	if got := gauge(); got != 0 {
		t.Errorf("gauge before any report %v, want 0", got)
	}
	// reportTwice reports as two passes of the inventory would, and checks the gauge.
	reportTwice := func(want float64) {
		t.Helper()
		l.Report()
		l.Report()
		if got := gauge(); got != want {
			t.Errorf("gauge %v, want %v", got, want)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		h.OnAdd(svc("ns", n), false)
	}
	reportTwice(2)
	if lines := strings.Count(log.String(), "first_left_out=ns/b"); lines != 1 {
		t.Errorf("logged %d times, want once:\n%s", lines, log)
	}
	if !strings.Contains(log.String(), "SEMAPHORE_TEST_LIMIT") {
		t.Errorf("the log does not name the setting:\n%s", log)
	}
	h.OnDelete(svc("ns", "b"))
	h.OnDelete(svc("ns", "c"))
	reportTwice(0)
	if lines := strings.Count(log.String(), "no longer"); lines != 1 {
		t.Errorf("back within the limit logged %d times, want once:\n%s", lines, log)
	}
}
