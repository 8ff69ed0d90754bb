package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// A key whose sync fails is retried until it succeeds; every sync is counted by remote and
// result; Run returns once its context is done.
func TestLoopRetriesAndCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	loop := &reconcile.Loop[string]{
		Queue: queue,
		Sync: func(_ context.Context, key string) (reconcile.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			if key == "aws/flaky" && calls[key] < 3 {
				return reconcile.Error, errors.New("transient")
			}
			if calls["aws/flaky"] == 3 && calls["gcp/steady"] == 1 {
				close(done)
			}
			return reconcile.Success, nil
		},
		Remote:  func(key string) string { return key[:3] },
		Metrics: reconcile.NewMetrics(metrics.NewFactory(reg, "test"), "one thing"),
		Log:     slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { loop.Run(ctx, 2); close(stopped) }()
	queue.Add("aws/flaky")
	queue.Add("gcp/steady")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("keys not reconciled: %v", calls)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was done")
	}
	for _, c := range []struct {
		remote string
		result reconcile.Result
		want   float64
	}{{"aws", reconcile.Error, 2}, {"aws", reconcile.Success, 1}, {"gcp", reconcile.Success, 1}} {
		if got, _ := testenv.MetricSeries(t, reg, "test_reconcile_total", map[string]string{"remote": c.remote, "result": string(c.result)}); got != c.want {
			t.Errorf("reconcile_total{remote=%s,result=%s} = %v, want %v", c.remote, c.result, got, c.want)
		}
	}
}

// A sync under way when the loop stops finishes on a live context (a write cut off in flight
// would be written again by the replica that takes over), keys still queued are not synced,
// and a sync that does not finish has its context ended FinishGrace after the stop.
func TestLoopFinishesTheSyncUnderWayOnStop(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	started := make(chan string, 2)
	var mu sync.Mutex
	ended := map[string]error{} // each key's context's state when its sync returned
	loop := &reconcile.Loop[string]{
		Queue: queue,
		Sync: func(ctx context.Context, key string) (reconcile.Result, error) {
			started <- key
			switch key {
			case "aws/write":
				select { // a write in flight
				case <-ctx.Done():
				case <-time.After(300 * time.Millisecond):
				}
			case "aws/hang":
				<-ctx.Done()
			}
			mu.Lock()
			ended[key] = ctx.Err()
			mu.Unlock()
			return reconcile.Success, nil
		},
		Remote:  func(key string) string { return key[:3] },
		Metrics: reconcile.NewMetrics(metrics.NewFactory(prometheus.NewRegistry(), "test"), "one thing"),
		Log:     slog.New(slog.DiscardHandler),
	}
	stopWhileSyncing := func(inFlight string) {
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { loop.Run(ctx, 1); close(stopped) }()
		queue.Add(inFlight)
		if got := <-started; got != inFlight {
			t.Fatalf("synced %s first, want %s", got, inFlight)
		}
		queue.Add("aws/queued")
		cancel()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatalf("Run did not return with %s under way", inFlight)
		}
	}

	stopWhileSyncing("aws/write")
	mu.Lock()
	if err, ok := ended["aws/write"]; !ok || err != nil {
		t.Errorf("the sync under way: finished %v, its context ended with %v; want finished on a live context", ok, err)
	}
	mu.Unlock()

	queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	loop.Queue = queue
	stopWhileSyncing("aws/hang")
	mu.Lock()
	defer mu.Unlock()
	if err := ended["aws/hang"]; !errors.Is(err, context.Canceled) {
		t.Errorf("a sync that does not finish: its context ended with %v, want context.Canceled after the grace", err)
	}
	if _, ok := ended["aws/queued"]; ok {
		t.Error("a key queued when the loop stopped was synced")
	}
}

func TestClashes(t *testing.T) {
	c := reconcile.NewClashes[string]()
	if !c.Record("svc", "aws/ns/svc") {
		t.Error("first clash on a name is not new")
	}
	if c.Record("svc", "aws/ns/svc") {
		t.Error("second clash on the same name is new")
	}
	if k, ok := c.Waiting("svc"); !ok || k != "aws/ns/svc" {
		t.Errorf("Waiting = %q, %v", k, ok)
	}
	c.Forget("svc")
	if _, ok := c.Waiting("svc"); ok {
		t.Error("forgotten clash still waiting")
	}
	if !c.Record("svc", "aws/ns/svc") {
		t.Error("clash after Forget is not new")
	}
}

func TestMetaOfUnwrapsTombstones(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}}
	for _, obj := range []any{p, cache.DeletedFinalStateUnknown{Key: "n/a", Obj: p}} {
		m, err := reconcile.MetaOf(obj)
		if err != nil || m.GetName() != "a" {
			t.Errorf("MetaOf(%T) = %v, %v", obj, m, err)
		}
	}
	if _, err := reconcile.MetaOf("not an object"); err == nil {
		t.Error("MetaOf accepted a string")
	}
}

// Two sources whose names coincide: the one that holds the name resolving its (non-)clash
// must not drop the other's wait.
func TestClashesResolveKeepsOtherWaiter(t *testing.T) {
	c := reconcile.NewClashes[string]()
	c.Record("gcp-team-a-b", "gcp/team-a/b")
	c.Resolve("gcp-team-a-b", "gcp/team/a-b")
	if k, ok := c.Waiting("gcp-team-a-b"); !ok || k != "gcp/team-a/b" {
		t.Fatalf("waiter dropped by another key's Resolve: %q, %v", k, ok)
	}
	c.Resolve("gcp-team-a-b", "gcp/team-a/b")
	if _, ok := c.Waiting("gcp-team-a-b"); ok {
		t.Fatal("Resolve by the waiting key kept the clash")
	}
}

// InitRemote exports every result of a remote at zero before any sync, so that a dashboard's
// error rate reads 0 rather than no data; other remotes stay absent.
func TestInitRemoteExportsZeros(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := reconcile.NewMetrics(metrics.NewFactory(reg, "test"), "one thing")
	m.InitRemote("aws")
	for _, result := range []reconcile.Result{reconcile.Success, reconcile.Error, reconcile.Clash, reconcile.Skipped} {
		got, n := testenv.MetricSeries(t, reg, "test_reconcile_total", map[string]string{"remote": "aws", "result": string(result)})
		if n != 1 || got != 0 {
			t.Errorf("reconcile_total{remote=aws,result=%s} = %v in %d series, want 0 in one", result, got, n)
		}
	}
	if _, n := testenv.MetricSeries(t, reg, "test_reconcile_total", map[string]string{"remote": "gcp", "result": string(reconcile.Error)}); n != 0 {
		t.Error("reconcile_total of a remote that was not initialised is exported")
	}
}
