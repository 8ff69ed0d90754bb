package mirrorcontroller

import (
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Metrics are the service mirror's own metrics.
type Metrics struct {
	counters  multiremote.Counters
	inventory []multiremote.Gauge[inventory]
}

// NewMetrics creates the service mirror's metrics on f.
func NewMetrics(f *metrics.Factory) *Metrics {
	return &Metrics{
		counters: multiremote.Counters{
			Reconcile: reconcile.NewMetrics(f, "one remote Service"),
			Writes: f.CounterVec("writes_total",
				"Write requests made to the local cluster, by kind (Service, EndpointSlice) and verb (create, update, delete).", "kind", "verb"),
			Clashes: f.CounterVec("clashes_total",
				"Times a local object had a mirror's name but was not created by the service mirror; it is left alone.", "remote", "kind"),
		},
		inventory: []multiremote.Gauge[inventory]{
			multiremote.NewGauge(f, "remote_services", "Remote Services selected for mirroring, as last seen, by remote.", func(i inventory) int { return i.RemoteServices }),
			multiremote.NewGauge(f, "mirrors", "Mirror Services present in the local cluster, by remote.", func(i inventory) int { return i.Mirrors }),
			multiremote.NewGauge(f, "mirrored_endpoints", "Endpoints in the local mirror EndpointSlices, by remote.", func(i inventory) int { return i.Endpoints }),
			multiremote.NewGauge(f, "mirror_drift", "Selected remote Services without a local mirror plus local mirrors without a selected remote Service, by remote. Non-zero for long means the mirror is not converging.", func(i inventory) int { return i.Drift }),
		},
	}
}
