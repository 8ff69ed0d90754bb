package mcscontroller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
)

// Metrics are the metrics of the Multi-Cluster Services API, named <component prefix>_mcs_*.
// Their cluster label is source_cluster, as the global services' are.
type Metrics struct {
	counters multiremote.Counters

	apiServed prometheus.Gauge
	imports   *prometheus.GaugeVec
	exports   *prometheus.GaugeVec
	endpoints *prometheus.GaugeVec
	idRefused *prometheus.GaugeVec
}

// NewMetrics creates the metrics of the Multi-Cluster Services API on a sub-factory "mcs" of f.
func NewMetrics(f *metrics.Factory) *Metrics {
	g := f.Sub("mcs")
	m := &Metrics{
		counters: apply.NewCounters(g, "one exported Service",
			"Write requests made to the local cluster for exported Services, by kind (ServiceImport, Service, EndpointSlice, ServiceExport: its status) and verb (create, update, delete).",
			"Times a local object had the name of a ServiceImport, derived Service or imported EndpointSlice but was not created by the service mirror; it is left alone.",
			kindServiceImport, apply.KindService, apply.KindEndpointSlice),
		apiServed: g.Gauge("api_served", "1 when the local cluster serves the Multi-Cluster Services API (its CRDs are installed) and ServiceExports are served; 0 while the service mirror waits for it."),
		imports:   g.GaugeVec("service_imports", "ServiceImports the service mirror holds in the local cluster, by type (ClusterSetIP, Headless).", "type"),
		exports: g.GaugeVec("service_exports",
			"Local ServiceExports by condition (Valid, Ready, Conflict) and status (True, False) as the service mirror last set it.", "condition", "status"),
		endpoints: g.GaugeVec("endpoints",
			"Endpoints in the imported EndpointSlices, by the cluster they come from (the local one included).", "source_cluster"),
		idRefused: g.GaugeVec("cluster_id_refused",
			"1 when the ID a cluster claims in its ClusterProperty cluster.clusterset.k8s.io is refused (not a DNS label, claimed by another cluster too, or another cluster's name) and its imported endpoints carry its name instead.", "source_cluster"),
	}
	m.initWrites()
	return m
}

// initWrites exports the writes of the ServiceExports' status, and the gauges by type and by
// condition, at zero; NewCounters did the other kinds'.
func (m *Metrics) initWrites() {
	m.counters.Writes.WithLabelValues(kindServiceExport, "update")
	for _, t := range []string{"ClusterSetIP", "Headless"} {
		m.imports.WithLabelValues(t)
	}
	for _, c := range []string{"Valid", "Ready", "Conflict"} {
		for _, s := range []string{"True", "False"} {
			m.exports.WithLabelValues(c, s)
		}
	}
}

// initCluster exports the per-cluster series of cluster at zero.
func (m *Metrics) initCluster(cluster string) {
	m.endpoints.WithLabelValues(cluster)
	m.idRefused.WithLabelValues(cluster)
}
