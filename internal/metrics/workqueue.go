package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// WorkqueueProvider returns a workqueue.MetricsProvider whose metrics are created on f (not on
// client-go's global registry), labelled with the queue's name.
func WorkqueueProvider(f *Factory) workqueue.MetricsProvider {
	return &workqueueProvider{
		depth:      f.GaugeVec("workqueue_depth", "Current depth of the workqueue.", "name"),
		adds:       f.CounterVec("workqueue_adds_total", "Items added to the workqueue.", "name"),
		latency:    f.HistogramVec("workqueue_queue_duration_seconds", "How long an item stays in the workqueue before it is processed.", LatencyBuckets, "name"),
		work:       f.HistogramVec("workqueue_work_duration_seconds", "How long processing an item takes.", LatencyBuckets, "name"),
		unfinished: f.GaugeVec("workqueue_unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers.", "name"),
		longest:    f.GaugeVec("workqueue_longest_running_processor_seconds", "How long the longest running worker has been processing its item.", "name"),
		retries:    f.CounterVec("workqueue_retries_total", "Items re-queued after an error.", "name"),
	}
}

type workqueueProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func (p *workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}

func (p *workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

func (p *workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

func (p *workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.work.WithLabelValues(name)
}

func (p *workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}

func (p *workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}

func (p *workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}
