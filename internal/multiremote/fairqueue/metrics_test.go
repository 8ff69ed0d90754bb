package fairqueue_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote/fairqueue"
)

// The remotes' queues share the queue's metrics (one series each, nothing registered twice):
// depth and adds add up over the remotes, and the seconds of unfinished work are the sum of
// every remote's, not whichever remote's queue set the gauge last, while the longest running
// processor is the longest of any remote.
func TestMetricsAddUpOverRemotes(t *testing.T) {
	reg := prometheus.NewRegistry()
	provider := metrics.WorkqueueProvider(metrics.NewFactory(reg, "test"))
	q := fairqueue.New(fairqueue.Config[string]{
		Name: "mirrors", MetricsProvider: provider,
		RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string], Remote: remoteOf,
	})
	defer q.ShutDown()
	// A second queue on the same provider, as a component's controllers share one.
	other := fairqueue.New(fairqueue.Config[string]{
		Name: "global", MetricsProvider: provider,
		RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string], Remote: remoteOf,
	})
	defer other.ShutDown()
	other.Add("aws/x")

	for _, k := range []string{"aws/a", "aws/b", "gcp/a", "azure/a"} {
		q.Add(k)
	}
	series := func(name string) (float64, int) {
		return testenv.MetricSeries(t, reg, name, map[string]string{"name": "mirrors"})
	}
	if v, n := series("test_workqueue_depth"); v != 4 || n != 1 {
		t.Errorf("depth = %v in %d series, want 4 in 1", v, n)
	}
	if v, _ := series("test_workqueue_adds_total"); v != 4 {
		t.Errorf("adds = %v, want 4", v)
	}
	a, _ := get(t, q)
	b, _ := get(t, q)
	if remoteOf(a) == remoteOf(b) {
		t.Fatalf("took %s and %s, want keys of two remotes", a, b)
	}
	if v, _ := series("test_workqueue_depth"); v != 2 {
		t.Errorf("depth = %v after two Gets, want 2", v)
	}
	// Each remote's queue sets its part every half second.
	time.Sleep(1200 * time.Millisecond)
	unfinished, n := series("test_workqueue_unfinished_work_seconds")
	longest, _ := series("test_workqueue_longest_running_processor_seconds")
	if n != 1 {
		t.Errorf("unfinished work in %d series, want 1", n)
	}
	// Both keys have been in process for 0.7 s at least (the last update) and 1.2 s at most.
	if longest < 0.7 || longest > 1.3 {
		t.Errorf("longest running processor = %v s, want 0.7 to 1.3", longest)
	}
	if unfinished < longest+0.7 {
		t.Errorf("unfinished work = %v s, want both keys' time in process (longest alone is %v s)", unfinished, longest)
	}
	q.Done(a)
	q.Done(b)
	if _, count := testenv.HistogramSeries(t, reg, "test_workqueue_work_duration_seconds", map[string]string{"name": "mirrors"}); count != 2 {
		t.Errorf("work durations observed: %d, want 2", count)
	}
	if v, _ := testenv.MetricSeries(t, reg, "test_workqueue_depth", map[string]string{"name": "global"}); v != 1 {
		t.Errorf("depth of the other queue = %v, want 1", v)
	}
}
