package multiremote_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/multiremote"
)

// An inventory pass gives its processor away every 256 objects: on one processor, a goroutine
// waiting to run (a sync woken meanwhile) runs at the 256th step, not after the pass.
func TestYielderLetsOthersRunEvery256Objects(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	done := make(chan struct{})
	go func() { ran.Store(true); close(done) }()
	var y multiremote.Yielder
	for range 255 {
		y.Step()
	}
	// Without a yield nothing else ran on the one processor (255 steps take far less than
	// the scheduler's 10 ms time slice).
	if ran.Load() {
		t.Skip("the waiting goroutine was scheduled without a yield; cannot tell")
	}
	y.Step()
	if !ran.Load() {
		t.Error("the 256th step did not let the waiting goroutine run")
	}
	<-done
}
