package fairqueue_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/multiremote/fairqueue"
)

// remoteOf is the remote of a "remote/name" key.
func remoteOf(k string) string {
	r, _, _ := strings.Cut(k, "/")
	return r
}

func newQueue(t *testing.T, limiter func() workqueue.TypedRateLimiter[string]) *fairqueue.Queue[string] {
	t.Helper()
	if limiter == nil {
		limiter = workqueue.DefaultTypedControllerRateLimiter[string]
	}
	q := fairqueue.New(fairqueue.Config[string]{RateLimiter: limiter, Remote: remoteOf})
	t.Cleanup(q.ShutDown)
	return q
}

// get is q.Get, failing the test if it blocks for a second.
func get(t *testing.T, q workqueue.TypedInterface[string]) (string, bool) {
	t.Helper()
	type got struct {
		key      string
		shutdown bool
	}
	c := make(chan got, 1)
	go func() { k, s := q.Get(); c <- got{k, s} }()
	select {
	case g := <-c:
		return g.key, g.shutdown
	case <-time.After(time.Second):
		t.Fatal("Get blocked for a second")
		return "", false
	}
}

// A remote with a thousand keys queued does not hold up another's one key: it is handed out
// within the first two Gets, whichever remote's turn it is.
func TestQuietRemoteIsServedWithinOneRound(t *testing.T) {
	q := newQueue(t, nil)
	for i := range 1000 {
		q.Add(fmt.Sprintf("churn/%d", i))
	}
	q.Add("quiet/a")
	if got := q.Len(); got != 1001 {
		t.Fatalf("Len = %d, want 1001 over both remotes", got)
	}
	first, _ := get(t, q)
	second, _ := get(t, q)
	if first != "quiet/a" && second != "quiet/a" {
		t.Errorf("the first two Gets handed out %s and %s, not quiet/a", first, second)
	}
}

// Remotes with work take turns, each in the order its keys were added; a remote that runs out
// drops out of the round, and one that was not known before joins it.
func TestRemotesTakeTurns(t *testing.T) {
	q := newQueue(t, nil)
	for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "c/1", "c/2"} {
		q.Add(k)
	}
	var got []string
	for range 4 {
		k, _ := get(t, q)
		got = append(got, k)
	}
	q.Add("d/1")
	for range 3 {
		k, _ := get(t, q)
		got = append(got, k)
	}
	want := "a/1 b/1 c/1 a/2 c/2 d/1 a/3"
	if strings.Join(got, " ") != want {
		t.Errorf("handed out %v, want %s", got, want)
	}
}

// A queue whose keys all belong to one remote (a controller whose keys belong to no single
// remote) is client-go's queue: first in, first out.
func TestOneRemoteIsFirstInFirstOut(t *testing.T) {
	q := fairqueue.New(fairqueue.Config[string]{
		RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string],
		Remote:      func(string) string { return "" },
	})
	defer q.ShutDown()
	keys := []string{"x/3", "y/1", "x/1", "z/9"}
	for _, k := range keys {
		q.Add(k)
	}
	for _, want := range keys {
		if k, _ := get(t, q); k != want {
			t.Fatalf("Get = %s, want %s", k, want)
		}
	}
}

// Workers waiting on an empty queue all get a key when several are queued at once: keys of
// several remotes are handed out in parallel, not one worker at a time.
func TestWaitingWorkersAllWakeForKeysQueuedAtOnce(t *testing.T) {
	q := newQueue(t, nil)
	const workers = 4
	got := make(chan string, workers)
	for range workers {
		go func() { k, _ := q.Get(); got <- k }()
	}
	time.Sleep(20 * time.Millisecond) // let them wait
	for i := range workers {
		q.Add(fmt.Sprintf("r%d/a", i))
	}
	for i := range workers {
		select {
		case <-got:
		case <-time.After(time.Second):
			t.Fatalf("%d of %d waiting workers got a key, %d keys queued", i, workers, q.Len())
		}
	}
}

// A key added while it is processed is not handed out to a second worker, however often it is
// added, and is handed out once more after Done.
func TestKeyAddedWhileProcessingIsHandedOutOnceAfterDone(t *testing.T) {
	q := newQueue(t, nil)
	q.Add("aws/a")
	q.Add("aws/a")
	if got := q.Len(); got != 1 {
		t.Fatalf("Len = %d after adding one key twice, want 1", got)
	}
	k, _ := get(t, q)
	q.Add(k)
	q.Add(k)
	if got := q.Len(); got != 0 {
		t.Fatalf("Len = %d while the only key is processed, want 0", got)
	}
	q.Done(k)
	if got := q.Len(); got != 1 {
		t.Fatalf("Len = %d after Done of a key added meanwhile, want 1", got)
	}
	if again, _ := get(t, q); again != k {
		t.Errorf("Get = %s, want %s again", again, k)
	}
	q.Done(k)
	if got := q.Len(); got != 0 {
		t.Errorf("Len = %d, want 0: the key was handed out again once, not twice", got)
	}
}

// A key requeued with AddRateLimited comes back after its remote's rate limiter's delay (a
// waiting Get wakes for it), its requeues are counted until Forget, and each remote has a rate
// limiter of its own.
func TestRateLimitedRequeueComesBackAfterItsDelay(t *testing.T) {
	var limiters atomic.Int32
	q := newQueue(t, func() workqueue.TypedRateLimiter[string] {
		limiters.Add(1)
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, time.Second)
	})
	q.Add("aws/a")
	q.Add("gcp/b")
	k, _ := get(t, q)
	start := time.Now()
	q.AddRateLimited(k)
	q.Done(k)
	if n := q.NumRequeues(k); n != 1 {
		t.Errorf("NumRequeues = %d, want 1", n)
	}
	if other, _ := get(t, q); other == k {
		t.Fatalf("%s was handed out again before its delay", k)
	}
	if again, _ := get(t, q); again != k {
		t.Fatalf("Get = %s, want the requeued %s", again, k)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Errorf("the requeued key came back after %v, before the limiter's 200ms", waited)
	}
	q.Forget(k)
	q.Done(k)
	if n := q.NumRequeues(k); n != 0 {
		t.Errorf("NumRequeues = %d after Forget, want 0", n)
	}
	if n := q.NumRequeues("never/added"); n != 0 {
		t.Errorf("NumRequeues of a remote never seen = %d, want 0", n)
	}
	if n := limiters.Load(); n != 2 {
		t.Errorf("%d rate limiters made, want one per remote (2)", n)
	}
}

// ShutDown: keys still queued are handed out, adds are ignored, then Get says shutdown; a
// Get waiting on an empty queue returns at once.
func TestShutDownHandsOutWhatIsQueuedThenStops(t *testing.T) {
	q := newQueue(t, nil)
	waiting := make(chan bool)
	go func() { _, s := q.Get(); waiting <- s }()
	time.Sleep(10 * time.Millisecond) // let it wait
	q.ShutDown()
	select {
	case s := <-waiting:
		if !s {
			t.Error("a Get waiting on an empty queue returned a key at shutdown")
		}
	case <-time.After(time.Second):
		t.Fatal("a waiting Get did not return at shutdown")
	}

	q = newQueue(t, nil)
	q.Add("aws/a")
	q.Add("gcp/b")
	q.ShutDown()
	q.Add("aws/c")
	q.Add("new/d")
	if !q.ShuttingDown() {
		t.Error("ShuttingDown is false after ShutDown")
	}
	seen := map[string]bool{}
	for range 2 {
		k, s := get(t, q)
		if s {
			t.Fatal("Get said shutdown with keys still queued")
		}
		seen[k] = true
	}
	if !seen["aws/a"] || !seen["gcp/b"] {
		t.Errorf("handed out %v, want the two keys queued before shutdown", seen)
	}
	if k, s := get(t, q); !s {
		t.Errorf("Get = %s after the queued keys, want shutdown (adds after ShutDown are ignored)", k)
	}
}

// ShutDownWithDrain waits until every key handed out is Done, in every remote.
func TestShutDownWithDrainWaitsForKeysInProcess(t *testing.T) {
	q := newQueue(t, nil)
	q.Add("aws/a")
	q.Add("gcp/b")
	a, _ := get(t, q)
	b, _ := get(t, q)
	drained := make(chan struct{})
	go func() { q.ShutDownWithDrain(); close(drained) }()
	q.Done(a)
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned with a key of another remote in process")
	case <-time.After(100 * time.Millisecond):
	}
	q.Done(b)
	select {
	case <-drained:
	case <-time.After(time.Second):
		t.Fatal("ShutDownWithDrain did not return once every key was Done")
	}
	if _, s := get(t, q); !s {
		t.Error("Get after a drained shutdown did not say shutdown")
	}
}

// Workers and producers at once (run with -race): every key added is processed, none by two
// workers at a time, and every goroutine ends with the queue.
func TestConcurrentWorkersProcessEveryKeyOnceAtATime(t *testing.T) {
	before := runtime.NumGoroutine()
	q := fairqueue.New(fairqueue.Config[string]{
		Name:            "test",
		MetricsProvider: discardProvider{},
		RateLimiter: func() workqueue.TypedRateLimiter[string] {
			return workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond)
		},
		Remote: remoteOf,
	})
	const remotes, keys, rounds = 5, 40, 20
	var inProcess sync.Map
	var processed sync.Map
	var overlap atomic.Bool
	var workers sync.WaitGroup
	for range 8 {
		workers.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				if _, busy := inProcess.LoadOrStore(k, true); busy {
					overlap.Store(true)
				}
				processed.Store(k, true)
				if q.NumRequeues(k) == 0 && len(k)%3 == 0 {
					q.AddRateLimited(k) // a failure, retried once
				} else {
					q.Forget(k)
				}
				inProcess.Delete(k)
				q.Done(k)
			}
		})
	}
	var producers sync.WaitGroup
	for r := range remotes {
		producers.Go(func() {
			for i := range rounds * keys {
				q.Add(fmt.Sprintf("r%d/%d", r, i%keys))
			}
		})
	}
	producers.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < remotes*keys; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d keys processed", n, remotes*keys)
		}
		time.Sleep(10 * time.Millisecond)
		n = 0
		processed.Range(func(any, any) bool { n++; return true })
	}
	q.ShutDownWithDrain()
	workers.Wait()
	if overlap.Load() {
		t.Error("a key was processed by two workers at once")
	}
	settled(t, before)
}

// settled waits for the goroutines to be back to before.
func settled(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the queue:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Shut down, with keys waiting for their delay and named metrics (client-go then runs a
// goroutine per remote's queue for them), the queue leaves no goroutine running.
func TestShutDownLeavesNoGoroutine(t *testing.T) {
	for _, drain := range []bool{false, true} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			before := runtime.NumGoroutine()
			q := fairqueue.New(fairqueue.Config[string]{
				Name: "test", MetricsProvider: discardProvider{},
				RateLimiter: workqueue.DefaultTypedControllerRateLimiter[string], Remote: remoteOf,
			})
			for r := range 10 {
				q.Add(fmt.Sprintf("r%d/now", r))
				q.AddAfter(fmt.Sprintf("r%d/later", r), time.Hour)
			}
			if runtime.NumGoroutine() <= before {
				t.Fatal("the remotes' queues started no goroutine: nothing to check")
			}
			if drain {
				q.ShutDownWithDrain()
			} else {
				q.ShutDown()
			}
			settled(t, before)
		})
	}
}

// discardProvider gives a queue metrics that go nowhere, but is not client-go's no-op
// provider: with it, a queue runs its metrics goroutine.
type discardProvider struct{}

type nowhere struct{}

func (nowhere) Inc()            {}
func (nowhere) Dec()            {}
func (nowhere) Set(float64)     {}
func (nowhere) Observe(float64) {}

func (discardProvider) NewDepthMetric(string) workqueue.GaugeMetric       { return nowhere{} }
func (discardProvider) NewAddsMetric(string) workqueue.CounterMetric      { return nowhere{} }
func (discardProvider) NewLatencyMetric(string) workqueue.HistogramMetric { return nowhere{} }
func (discardProvider) NewRetriesMetric(string) workqueue.CounterMetric   { return nowhere{} }
func (discardProvider) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return nowhere{}
}

func (discardProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return nowhere{}
}

func (discardProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return nowhere{}
}
