// Package measure is what the components' benchmarks share: an unthrottled client, work
// spread over goroutines, a component's binary run and counted against real API servers
// (convergence, writes, writes at rest, peak memory), and change latencies.
package measure

import (
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// Unthrottled is a copy of the admin configuration of c without a client-side rate limit: a
// benchmark fills its remotes as fast as the API server takes it.
func Unthrottled(c *testenv.Cluster) *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
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
