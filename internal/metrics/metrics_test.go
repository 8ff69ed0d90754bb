package metrics_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/version"
)

func TestFactorySpecs(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := metrics.NewFactory(reg, "semaphore_test")
	if got := f.Prefix(); got != "semaphore_test" {
		t.Errorf("Prefix() = %q, want semaphore_test", got)
	}
	// Created out of order: Specs sorts them.
	f.HistogramVec("reconcile_duration_seconds", "Reconcile latency.", metrics.LatencyBuckets, "result")
	f.Gauge("mirrors", "Mirrors.")
	f.CounterVec("writes_total", "Writes.", "kind", "verb")
	f.Counter("clashes_total", "Clashes.")
	f.GaugeVec("remote_up", "Up.", "remote")

	want := []metrics.Spec{
		{Name: "semaphore_test_clashes_total", Type: "counter", Help: "Clashes."},
		{Name: "semaphore_test_mirrors", Type: "gauge", Help: "Mirrors."},
		{Name: "semaphore_test_reconcile_duration_seconds", Type: "histogram", Help: "Reconcile latency.", Labels: []string{"result"}},
		{Name: "semaphore_test_remote_up", Type: "gauge", Help: "Up.", Labels: []string{"remote"}},
		{Name: "semaphore_test_writes_total", Type: "counter", Help: "Writes.", Labels: []string{"kind", "verb"}},
	}
	if diff := cmp.Diff(want, f.Specs()); diff != "" {
		t.Errorf("Specs() mismatch (-want +got):\n%s", diff)
	}

	// The metrics are registered under the same names: the docs match what is served.
	descs := make(chan *prometheus.Desc, 16)
	go func() {
		reg.Describe(descs)
		close(descs)
	}()
	var registered []string
	for d := range descs {
		s := d.String()
		_, rest, _ := strings.Cut(s, `fqName: "`)
		name, _, _ := strings.Cut(rest, `"`)
		registered = append(registered, name)
	}
	for _, s := range want {
		found := false
		for _, r := range registered {
			found = found || r == s.Name
		}
		if !found {
			t.Errorf("%s is in Specs() but not registered (registered: %v)", s.Name, registered)
		}
	}
}

func TestFactorySpecsIsACopy(t *testing.T) {
	f := metrics.NewFactory(prometheus.NewRegistry(), "semaphore_test")
	f.CounterVec("a_total", "A.", "x")
	s := f.Specs()
	s[0].Name = "changed"
	if got := f.Specs()[0]; got.Name != "semaphore_test_a_total" {
		t.Errorf("changing the result of Specs() changed the factory: %+v", got)
	}
}

func TestFactoryLabelsNotAliased(t *testing.T) {
	f := metrics.NewFactory(prometheus.NewRegistry(), "semaphore_test")
	labels := []string{"remote"}
	f.GaugeVec("g", "G.", labels...)
	labels[0] = "changed"
	if diff := cmp.Diff([]string{"remote"}, f.Specs()[0].Labels); diff != "" {
		t.Errorf("Spec labels follow the caller's slice (-want +got):\n%s", diff)
	}
}

func TestFactoriesIndependent(t *testing.T) {
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	fa, fb := metrics.NewFactory(regA, "semaphore_test"), metrics.NewFactory(regB, "semaphore_test")
	// The same names on two registries: no conflict (no global state).
	a := fa.CounterVec("things_total", "Things.", "remote")
	b := fb.CounterVec("things_total", "Things.", "remote")
	a.WithLabelValues("aws").Add(2)
	b.WithLabelValues("aws").Add(5)

	if diff := cmp.Diff(map[string]float64{"remote=aws": 2}, series(t, regA, "semaphore_test_things_total")); diff != "" {
		t.Errorf("registry A mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"remote=aws": 5}, series(t, regB, "semaphore_test_things_total")); diff != "" {
		t.Errorf("registry B mismatch (-want +got):\n%s", diff)
	}
	if len(fa.Specs()) != 1 || len(fb.Specs()) != 1 {
		t.Errorf("Specs() = %v and %v, want one each", fa.Specs(), fb.Specs())
	}
}

func TestFactoryDuplicatePanics(t *testing.T) {
	f := metrics.NewFactory(prometheus.NewRegistry(), "semaphore_test")
	f.Counter("things_total", "Things.")
	defer func() {
		if recover() == nil {
			t.Error("registering the same metric twice on one registry did not panic")
		}
	}()
	f.Counter("things_total", "Things.")
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics.BuildInfo(metrics.NewFactory(reg, "semaphore_test"))
	want := map[string]float64{"go_version=" + runtime.Version() + ",version=" + version.Version: 1}
	if diff := cmp.Diff(want, series(t, reg, "semaphore_test_build_info")); diff != "" {
		t.Errorf("build_info mismatch (-want +got):\n%s", diff)
	}
}

func TestWorkqueueProvider(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := metrics.NewFactory(reg, "semaphore_test")
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{
		Name:            "services",
		MetricsProvider: metrics.WorkqueueProvider(f),
	})
	defer q.ShutDown()

	q.Add("aws/sys-log/fluentd")
	q.Add("aws/sys-log/other")
	item, _ := q.Get()
	q.Done(item)

	value := func(name string) (float64, bool) {
		v, n := testenv.MetricSeries(t, reg, name, map[string]string{"name": "services"})
		return v, n > 0
	}
	want := map[string]float64{
		"semaphore_test_workqueue_adds_total":                        2,
		"semaphore_test_workqueue_depth":                             1,
		"semaphore_test_workqueue_queue_duration_seconds":            1, // observations
		"semaphore_test_workqueue_work_duration_seconds":             1, // observations
		"semaphore_test_workqueue_unfinished_work_seconds":           0,
		"semaphore_test_workqueue_longest_running_processor_seconds": 0,
	}
	got := map[string]float64{}
	for name := range want {
		v, ok := value(name)
		if !ok {
			t.Errorf("%s{name=\"services\"} is not on the registry", name)
			continue
		}
		got[name] = v
	}
	// unfinished/longest are updated by a background ticker; only their presence is certain.
	for _, name := range []string{"semaphore_test_workqueue_unfinished_work_seconds", "semaphore_test_workqueue_longest_running_processor_seconds"} {
		if _, ok := got[name]; ok {
			got[name] = 0
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workqueue metrics mismatch (-want +got):\n%s", diff)
	}

	// Retries only exist for rate-limited queues (TestWorkqueueRetries), but are documented too.
	want["semaphore_test_workqueue_retries_total"] = 0
	// Every workqueue metric the provider creates is documented through Specs.
	var specs []string
	for _, s := range f.Specs() {
		specs = append(specs, s.Name)
		if diff := cmp.Diff([]string{"name"}, s.Labels); diff != "" {
			t.Errorf("%s labels mismatch (-want +got):\n%s", s.Name, diff)
		}
	}
	if len(specs) != len(want) {
		t.Errorf("Specs() = %v, want the %d workqueue metrics", specs, len(want))
	}
}

func TestWorkqueueRetries(t *testing.T) {
	reg := prometheus.NewRegistry()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "slices", MetricsProvider: metrics.WorkqueueProvider(metrics.NewFactory(reg, "semaphore_test"))},
	)
	defer q.ShutDown()
	q.AddRateLimited("x")
	q.AddRateLimited("x")
	if diff := cmp.Diff(map[string]float64{"name=slices": 2}, series(t, reg, "semaphore_test_workqueue_retries_total")); diff != "" {
		t.Errorf("retries mismatch (-want +got):\n%s", diff)
	}
}

// series returns the values of the series of metric family name on reg, keyed by their labels
// ("k=v,k=v"); histograms give their observation count.
func series(t *testing.T, reg prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := strings.Join(ls, ",")
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// A sub-factory names its metrics below the parent's prefix, on the same registry, and they
// are in the parent's specs (the generated metrics reference).
func TestSubFactory(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := metrics.NewFactory(reg, "semaphore_x")
	f.Counter("a_total", "A.")
	f.Sub("global").Counter("a_total", "Global A.")
	var names []string
	for _, s := range f.Specs() {
		names = append(names, s.Name)
	}
	if want := []string{"semaphore_x_a_total", "semaphore_x_global_a_total"}; !slices.Equal(names, want) {
		t.Errorf("specs %v, want %v", names, want)
	}
	if got, err := reg.Gather(); err != nil || len(got) != 2 {
		t.Errorf("gathered %d families, %v", len(got), err)
	}
}
