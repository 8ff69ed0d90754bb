package status

import (
	"context"
	"fmt"
	"time"

	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// goRuntime is what a controller's Go runtime runs with, from its metrics, next to the memory
// limit of its container.
type goRuntime struct {
	gcPercent, softLimit float64 // go_gc_gogc_percent, go_gc_gomemlimit_bytes
	containerLimit       int64   // bytes; 0 for none
}

// readGoRuntime reads c's runtime settings from its metrics.
func readGoRuntime(ctx context.Context, c layout.Controller) (goRuntime, error) {
	r := goRuntime{containerLimit: c.MemoryLimit}
	samples, err := Scrape(ctx, c.Admin, "go_gc_", 5*time.Second)
	if err != nil {
		return r, err
	}
	r.gcPercent, _ = testbed.SampleSum(samples, "go_gc_gogc_percent", nil)
	r.softLimit, _ = testbed.SampleSum(samples, "go_gc_gomemlimit_bytes", nil)
	return r, nil
}

// problem says how r differs from what a component sets by itself (daemon.tuneGC): the
// collector at DefaultGCPercent, a soft limit of MemoryLimitShare of the container's limit.
func (r goRuntime) problem() string {
	if r.gcPercent != daemon.DefaultGCPercent {
		return fmt.Sprintf("GOGC is %v, want %d", r.gcPercent, daemon.DefaultGCPercent)
	}
	if r.containerLimit == 0 {
		return ""
	}
	if want := int64(float64(r.containerLimit) * daemon.MemoryLimitShare); int64(r.softLimit) != want {
		return fmt.Sprintf("the soft memory limit is %.0f bytes, want %d (%.0f%% of the container's %d)",
			r.softLimit, want, 100*daemon.MemoryLimitShare, r.containerLimit)
	}
	return ""
}

func (r goRuntime) String() string {
	if r.containerLimit == 0 {
		return fmt.Sprintf("GOGC %.0f, no memory limit", r.gcPercent)
	}
	return fmt.Sprintf("GOGC %.0f, soft limit %.0f MiB of %d MiB", r.gcPercent, r.softLimit/(1<<20), r.containerLimit>>20)
}
