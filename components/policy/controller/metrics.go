package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Metrics are the policy controller's own metrics.
type Metrics struct {
	counters  multiremote.Counters
	adopted   *prometheus.CounterVec
	refused   *prometheus.CounterVec
	overLimit *prometheus.GaugeVec
	inventory []multiremote.Gauge[inventory]
}

// NewMetrics creates the policy controller's metrics on f.
func NewMetrics(f *metrics.Factory) *Metrics {
	return &Metrics{
		counters: multiremote.Counters{
			Reconcile: reconcile.NewMetrics(f, "one set"),
			Writes: f.CounterVec("writes_total",
				"Write requests for GlobalNetworkSets made to the local cluster, by verb (create, update, delete).", "verb"),
			Clashes: f.CounterVec("clashes_total",
				"Times a GlobalNetworkSet had a set's name but was not created by semaphore-policy; it is left alone.", "remote"),
		},
		adopted: f.CounterVec("adopted_total",
			"GlobalNetworkSets the original semaphore-policy made that were taken over (SEMAPHORE_ADOPT_ORIGINAL), by remote.", "remote"),
		refused: addrguard.RefusedMetric(f, "were kept out of the GlobalNetworkSets", netset.ReasonHostNetwork),
		overLimit: f.GaugeVec("over_limit",
			"What a remote's pods would put into GlobalNetworkSets beyond the limits, left out, by remote and what: "+
				"sets, the sets beyond SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE (those after the first by name); "+
				"members, the addresses beyond SEMAPHORE_POLICY_MAX_SET_MEMBERS (those after the first by address) in the sets made.",
			"remote", "what"),
		inventory: []multiremote.Gauge[inventory]{
			multiremote.NewGauge(f, "sets", "GlobalNetworkSets present in the local cluster for pods of a remote, by remote.", func(i inventory) int { return i.Sets }),
			multiremote.NewGauge(f, "addresses", "Addresses (nets) in the GlobalNetworkSets of a remote, by remote.", func(i inventory) int { return i.Addresses }),
			multiremote.NewGauge(f, "remote_pods", "Remote pods carrying the policy label, as last seen, by remote.", func(i inventory) int { return i.RemotePods }),
		},
	}
}
