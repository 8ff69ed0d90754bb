// Package fairqueue is a client-go rate-limiting workqueue that is fair between the remotes its
// keys belong to. A remote is another trust domain, and one whose objects churn (thousands of
// changes a second) would fill a single queue: a quiet remote's change would wait behind all of
// them. Here each remote has a queue of its own, and Get serves the remotes with work in turn.
package fairqueue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Config is what a fair queue is made of.
type Config[K comparable] struct {
	// Name names the queue in its metrics. Every remote's queue has this name, so that depth,
	// adds, queue latency, work duration and retries add up over the remotes.
	Name string
	// MetricsProvider creates the metrics; nil is client-go's global provider.
	MetricsProvider workqueue.MetricsProvider
	// RateLimiter makes the rate limiter of one remote's queue: each remote has its own, so
	// that one remote's failing keys do not use up the retries of the others.
	RateLimiter func() workqueue.TypedRateLimiter[K]
	// Remote names the remote a key belongs to; a key always names the same remote.
	Remote func(K) string
}

// Queue is a workqueue.TypedRateLimitingInterface that keeps one ordinary client-go
// rate-limiting queue per remote, created when a key of the remote is first added, so that
// deduplication, the processing and dirty sets, rate limiting and delayed adds are client-go's.
// Get hands out the first key of the next remote that has one, round-robin: a remote with
// 10,000 keys queued gets one turn per round like a remote with one.
//
// Nothing runs besides the remotes' queues (each has client-go's goroutines for delayed adds
// and, when named, for its metrics): a Get takes its key itself, and a remote's queue wakes
// waiting Gets when it queues a key, through its storage (Push).
type Queue[K comparable] struct {
	cfg     Config[K]
	metrics workqueue.MetricsProvider
	// wake holds a token when a key may have been queued since a waiting Get last looked.
	wake chan struct{}
	// stopped is closed when the queue starts shutting down.
	stopped  chan struct{}
	stopOnce sync.Once

	mu sync.Mutex
	// byRemote are the remotes' queues; order the same in the order they were created, which
	// Get serves in turn starting at next.
	byRemote     map[string]workqueue.TypedRateLimitingInterface[K]
	order        []workqueue.TypedRateLimitingInterface[K]
	next         int
	shuttingDown bool
}

var _ workqueue.TypedRateLimitingInterface[string] = (*Queue[string])(nil)

// New returns an empty fair queue.
func New[K comparable](cfg Config[K]) *Queue[K] {
	q := &Queue[K]{
		cfg:      cfg,
		metrics:  cfg.MetricsProvider,
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		byRemote: map[string]workqueue.TypedRateLimitingInterface[K]{},
	}
	if cfg.MetricsProvider != nil && cfg.Name != "" {
		q.metrics = combine(cfg.MetricsProvider, cfg.Name)
	}
	return q
}

// Add queues item in its remote's queue.
func (q *Queue[K]) Add(item K) {
	if s := q.queueOf(item, true); s != nil {
		s.Add(item)
	}
}

// AddAfter queues item in its remote's queue once duration has passed.
func (q *Queue[K]) AddAfter(item K, duration time.Duration) {
	if s := q.queueOf(item, true); s != nil {
		s.AddAfter(item, duration)
	}
}

// AddRateLimited queues item in its remote's queue when its remote's rate limiter says so.
func (q *Queue[K]) AddRateLimited(item K) {
	if s := q.queueOf(item, true); s != nil {
		s.AddRateLimited(item)
	}
}

// Forget stops tracking item's retries in its remote's rate limiter.
func (q *Queue[K]) Forget(item K) {
	if s := q.queueOf(item, false); s != nil {
		s.Forget(item)
	}
}

// NumRequeues is how many times item was requeued with AddRateLimited since its last Forget.
func (q *Queue[K]) NumRequeues(item K) int {
	if s := q.queueOf(item, false); s != nil {
		return s.NumRequeues(item)
	}
	return 0
}

// Done marks item as processed: its remote's queue hands it out again if it was added
// meanwhile.
func (q *Queue[K]) Done(item K) {
	if s := q.queueOf(item, false); s != nil {
		s.Done(item)
	}
}

// Len is the number of keys queued in all remotes' queues.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, s := range q.order {
		n += s.Len()
	}
	return n
}

// Get blocks until a key is queued and returns the first key of the next remote that has one.
// Once the queue is shutting down it hands out the keys still queued, then returns
// shutdown true, as client-go's queue does.
func (q *Queue[K]) Get() (item K, shutdown bool) {
	for {
		q.mu.Lock()
		item, ok, more := q.take()
		shuttingDown := q.shuttingDown
		q.mu.Unlock()
		if ok {
			if more {
				// Another waiting Get may have missed the token of a key still queued: two
				// keys queued at once leave one token.
				q.signal()
			}
			return item, false
		}
		if shuttingDown {
			return item, true
		}
		select {
		case <-q.wake:
		case <-q.stopped:
		}
	}
}

// take gets the first key of the next remote with keys queued, and says whether any remote
// still has some. q.mu is held: only take gets keys from the remotes' queues, so a queue that
// holds a key hands it out without blocking.
func (q *Queue[K]) take() (item K, ok, more bool) {
	n := len(q.order)
	for i := range n {
		s := q.order[(q.next+i)%n]
		if s.Len() == 0 {
			continue
		}
		q.next = (q.next + i + 1) % n
		item, _ = s.Get()
		for _, other := range q.order {
			if other.Len() > 0 {
				return item, true, true
			}
		}
		return item, true, false
	}
	return item, false, false
}

// ShutDown shuts every remote's queue down: adds are ignored from now on, Get hands out the
// keys still queued, then returns shutdown true.
func (q *Queue[K]) ShutDown() {
	for _, s := range q.stop() {
		s.ShutDown()
	}
}

// ShutDownWithDrain is ShutDown that also waits until every key handed out is Done, in every
// remote's queue at once. ShutDown called meanwhile stops the wait, unless it came before a
// remote's queue started to drain.
func (q *Queue[K]) ShutDownWithDrain() {
	subs := q.stop()
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(s.ShutDownWithDrain)
	}
	wg.Wait()
	// Client-go's delaying queue stops the goroutine of its delayed adds on ShutDown only;
	// after ShutDownWithDrain it would linger until its next ten-second heartbeat.
	for _, s := range subs {
		s.ShutDown()
	}
}

// ShuttingDown reports whether the queue is shutting down.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// stop marks the queue shutting down, wakes waiting Gets and returns the remotes' queues.
func (q *Queue[K]) stop() []workqueue.TypedRateLimitingInterface[K] {
	q.mu.Lock()
	q.shuttingDown = true
	subs := append([]workqueue.TypedRateLimitingInterface[K](nil), q.order...)
	q.mu.Unlock()
	q.stopOnce.Do(func() { close(q.stopped) })
	return subs
}

// queueOf is the queue of item's remote. A remote without one gets one when create is set and
// the queue is not shutting down; otherwise queueOf returns nil.
func (q *Queue[K]) queueOf(item K, create bool) workqueue.TypedRateLimitingInterface[K] {
	remote := q.cfg.Remote(item)
	q.mu.Lock()
	defer q.mu.Unlock()
	if s, ok := q.byRemote[remote]; ok {
		return s
	}
	if !create || q.shuttingDown {
		return nil
	}
	s := q.newRemoteQueue()
	q.byRemote[remote] = s
	q.order = append(q.order, s)
	return s
}

// newRemoteQueue is client-go's rate-limiting queue, as workqueue.NewTypedRateLimitingQueue-
// WithConfig makes it, with a storage that wakes waiting Gets.
func (q *Queue[K]) newRemoteQueue() workqueue.TypedRateLimitingInterface[K] {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[K]{
		Name:            q.cfg.Name,
		MetricsProvider: q.metrics,
		Queue:           waking[K]{Queue: workqueue.DefaultQueue[K](), wake: q.signal},
	})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[K]{
		Name:            q.cfg.Name,
		MetricsProvider: q.metrics,
		Queue:           base,
	})
	return workqueue.NewTypedRateLimitingQueueWithConfig(q.cfg.RateLimiter(), workqueue.TypedRateLimitingQueueConfig[K]{
		Name:            q.cfg.Name,
		MetricsProvider: q.metrics,
		DelayingQueue:   delaying,
	})
}

// signal leaves a token for a waiting Get, unless one is there already. It never blocks: a
// remote's queue calls it holding its own lock.
func (q *Queue[K]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waking is a remote queue's storage: every key it queues (added, added again after it was
// Done, or added once its delay passed) wakes a waiting Get.
type waking[K comparable] struct {
	workqueue.Queue[K]
	wake func()
}

func (w waking[K]) Push(item K) {
	w.Queue.Push(item)
	w.wake()
}
