// Package metrics creates a component's Prometheus metrics on an injected registry and records
// what it created, so the metrics reference (docs/metrics.md) is generated from the code itself.
package metrics

import (
	"runtime"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kube-semaphore/semaphore/internal/version"
)

// Spec describes one metric family a component exports.
type Spec struct {
	Name   string
	Type   string
	Help   string
	Labels []string
}

// Factory creates metrics named <prefix>_<name> and registers them on one registerer.
type Factory struct {
	prefix string
	reg    prometheus.Registerer
	record *specRecord
}

// specRecord is what a factory and its sub-factories created.
type specRecord struct {
	mu    sync.Mutex
	specs []Spec
}

// NewFactory returns a factory for metrics named prefix_*, registered on reg.
func NewFactory(reg prometheus.Registerer, prefix string) *Factory {
	return &Factory{prefix: prefix, reg: reg, record: &specRecord{}}
}

// Sub returns a factory for metrics named <prefix>_<name>_*, on the same registerer and
// recorded with f's: one part of a component with metrics of its own (reconcile_total, ...).
func (f *Factory) Sub(name string) *Factory {
	return &Factory{prefix: f.prefix + "_" + name, reg: f.reg, record: f.record}
}

// Prefix is the common prefix of this factory's metric names.
func (f *Factory) Prefix() string { return f.prefix }

func (f *Factory) add(name, typ, help string, labels []string) string {
	full := f.prefix + "_" + name
	f.record.mu.Lock()
	f.record.specs = append(f.record.specs, Spec{Name: full, Type: typ, Help: help, Labels: append([]string(nil), labels...)})
	f.record.mu.Unlock()
	return full
}

// Specs returns the metrics created so far by f and the factories it shares its record with,
// sorted by name.
func (f *Factory) Specs() []Spec {
	f.record.mu.Lock()
	defer f.record.mu.Unlock()
	out := make([]Spec, len(f.record.specs))
	for i, s := range f.record.specs {
		s.Labels = append([]string(nil), s.Labels...)
		out[i] = s
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// External records a metric that a custom collector of the component exports (for example
// one that reads device statistics at scrape time) and returns its full name.
func (f *Factory) External(name, typ, help string, labels ...string) string {
	return f.add(name, typ, help, labels)
}

// Counter creates and registers a counter.
func (f *Factory) Counter(name, help string) prometheus.Counter {
	return register(f, prometheus.NewCounter(prometheus.CounterOpts{Name: f.add(name, "counter", help, nil), Help: help}))
}

// Gauge creates and registers a gauge.
func (f *Factory) Gauge(name, help string) prometheus.Gauge {
	return register(f, prometheus.NewGauge(prometheus.GaugeOpts{Name: f.add(name, "gauge", help, nil), Help: help}))
}

// CounterVec creates and registers a counter with labels.
func (f *Factory) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return register(f, prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.add(name, "counter", help, labels), Help: help}, labels))
}

// GaugeVec creates and registers a gauge with labels.
func (f *Factory) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return register(f, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.add(name, "gauge", help, labels), Help: help}, labels))
}

// HistogramVec creates and registers a histogram with labels.
func (f *Factory) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.add(name, "histogram", help, labels), Help: help, Buckets: buckets}, labels)
	return register(f, h)
}

func register[C prometheus.Collector](f *Factory, c C) C {
	f.reg.MustRegister(c)
	return c
}

// LatencyBuckets suit reconcile and propagation latencies: 1 ms to about 30 s.
var LatencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// BuildInfo registers <prefix>_build_info, a constant 1 labelled with the version.
func BuildInfo(f *Factory) {
	g := f.GaugeVec("build_info", "A constant 1, labelled with the version of the component and of Go it was built with.", "version", "go_version")
	g.WithLabelValues(version.Version, runtime.Version()).Set(1)
}

// RegisterProcess registers the Go runtime and process collectors on reg.
func RegisterProcess(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Bool is the value of a gauge that says whether b: 1 or 0.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
