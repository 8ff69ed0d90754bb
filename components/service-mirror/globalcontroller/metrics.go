package globalcontroller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
)

// Metrics are the metrics of global services, named <component prefix>_global_*. Their
// cluster label is source_cluster: Prometheus' own cluster label (the scraping cluster) is
// often a target label, which would rename a metric label of the same name.
type Metrics struct {
	counters multiremote.Counters

	services      prometheus.Gauge
	localFirst    prometheus.Gauge
	localZones    prometheus.Gauge
	endpoints     *prometheus.GaugeVec
	readyEndpoint *prometheus.GaugeVec
	conflicts     *prometheus.GaugeVec
}

// NewMetrics creates the metrics of global services on a sub-factory "global" of f.
func NewMetrics(f *metrics.Factory) *Metrics {
	g := f.Sub("global")
	return &Metrics{
		counters: apply.NewCounters(g, "one global service",
			"Write requests made to the local cluster for global services, by kind (Service, EndpointSlice) and verb (create, update, delete).",
			"Times a local object had a global service's name but was not created by the service mirror; it is left alone.",
			apply.KindService, apply.KindEndpointSlice),
		services:   g.Gauge("services", "Global Services present in the local cluster."),
		localFirst: g.Gauge("local_first_services", "Global Services present in the local cluster whose definition asks for local-first routing."),
		localZones: g.Gauge("local_zones", "Zones of the local cluster's Nodes (topology.kubernetes.io/zone). Local-first routing needs at least one, and at most 8."),
		endpoints: g.GaugeVec("endpoints",
			"Endpoints in the local global EndpointSlices, by the cluster they come from (the local one included).", "source_cluster"),
		readyEndpoint: g.GaugeVec("ready_endpoints",
			"Ready endpoints in the local global EndpointSlices, by the cluster they come from (the local one included).", "source_cluster"),
		conflicts: g.GaugeVec("conflicts",
			"Global services whose definition in a cluster differs from the one used (the first cluster's in name order), by that cluster.", "source_cluster"),
	}
}

// initCluster exports the per-cluster series of cluster at zero, so that dashboards and
// alerts see 0 rather than no data.
func (m *Metrics) initCluster(cluster string) {
	for _, g := range []*prometheus.GaugeVec{m.endpoints, m.readyEndpoint, m.conflicts} {
		g.WithLabelValues(cluster)
	}
}
