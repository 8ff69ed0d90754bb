// Package measure is what the components' benchmarks share: unthrottled clients, namespaces,
// work paced or spread over goroutines, a component's binary run and counted against real API
// servers (convergence, writes, writes at rest, peak memory, its metrics), and change
// latencies.
package measure

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Unthrottled is a copy of the admin configuration of c without a client-side rate limit: a
// benchmark fills its remotes as fast as the API server takes it.
func Unthrottled(c *testenv.Cluster) *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// Client is an unthrottled client of c (Unthrottled).
func Client(c *testenv.Cluster) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(Unthrottled(c))
}

// Namespaces creates the namespaces names in c unless they exist, failing b otherwise.
func Namespaces(b *testing.B, c *testenv.Cluster, names ...string) {
	for _, ns := range names {
		if err := c.EnsureNamespace(context.Background(), ns); err != nil {
			b.Fatal(err)
		}
	}
}

// Paced calls f(0), ..., f(n-1), f(i) at i*every from the start, so that the rate holds
// however long each call takes.
func Paced(n int, every time.Duration, f func(i int)) {
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		f(i)
	}
}

// InParallel calls f(0) ... f(n-1) from 16 goroutines, failing on the first error.
func InParallel(b *testing.B, n int, f func(i int) error) { InWorkers(b, 16, n, f) }

// InWorkers calls f(0) ... f(n-1) from workers goroutines, failing on the first error: a
// reference that works as a controller's workers do.
func InWorkers(b *testing.B, workers, n int, f func(i int) error) {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
}
