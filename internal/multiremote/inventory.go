package multiremote

import (
	"iter"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// Gauge is a per-remote inventory gauge (labelled "remote") and how to read its value from the
// inventory I of one remote.
type Gauge[I any] struct {
	Vec   *prometheus.GaugeVec
	Value func(I) int
}

// NewGauge creates on f the per-remote gauge <prefix>_<name> whose value is value of the
// inventory.
func NewGauge[I any](f *metrics.Factory, name, help string, value func(I) int) Gauge[I] {
	return Gauge[I]{Vec: f.GaugeVec(name, help, "remote"), Value: value}
}

// SetGauges sets every gauge of each remote to its value in inv (a remote missing from inv
// has the zero inventory). Series exist for the given remotes only.
func SetGauges[I any](remotes iter.Seq[string], inv map[string]I, gauges []Gauge[I]) {
	for name := range remotes {
		i := inv[name]
		for _, g := range gauges {
			g.Vec.WithLabelValues(name).Set(float64(g.Value(i)))
		}
	}
}

// Yielder lets an inventory pass yield its processor every yieldEvery objects it reads. A pass
// reads every cached object (tens of milliseconds with tens of thousands) and is background
// work: a sync woken meanwhile should not wait behind it for one of the few processors.
type Yielder struct{ n int }

// yieldEvery is how many objects a pass reads between two yields.
const yieldEvery = 256

// Step counts one object read, and yields after every yieldEvery.
func (y *Yielder) Step() {
	if y.n++; y.n%yieldEvery == 0 {
		runtime.Gosched()
	}
}
