package fairqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// combine returns a provider that gives every remote's queue the metrics of the queue named
// name, except the two gauges a queue sets (rather than moves) every half second: shared, they
// would hold whichever remote's queue set them last. Each remote's queue sets a part of its
// own, and the queue's gauge holds their sum (the seconds of unfinished work) or their largest
// (the longest running processor). The other metrics add up as they are: each remote's queue
// moves the same depth gauge, counts on the same counters, observes the same histograms.
func combine(p workqueue.MetricsProvider, name string) workqueue.MetricsProvider {
	return &combined{
		MetricsProvider: p,
		unfinished:      &parts{gauge: p.NewUnfinishedWorkSecondsMetric(name), fold: sum},
		longest:         &parts{gauge: p.NewLongestRunningProcessorSecondsMetric(name), fold: largest},
	}
}

type combined struct {
	workqueue.MetricsProvider
	unfinished, longest *parts
}

func (c *combined) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return c.unfinished.add()
}

func (c *combined) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return c.longest.add()
}

// parts are the values the remotes' queues set, folded into one gauge.
type parts struct {
	mu     sync.Mutex
	gauge  workqueue.SettableGaugeMetric
	values []float64
	fold   func([]float64) float64
}

// add returns a new part, at zero.
func (p *parts) add() workqueue.SettableGaugeMetric {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values = append(p.values, 0)
	return part{p, len(p.values) - 1}
}

type part struct {
	of *parts
	i  int
}

func (p part) Set(v float64) {
	p.of.mu.Lock()
	defer p.of.mu.Unlock()
	p.of.values[p.i] = v
	p.of.gauge.Set(p.of.fold(p.of.values))
}

func sum(vs []float64) float64 {
	total := 0.0
	for _, v := range vs {
		total += v
	}
	return total
}

func largest(vs []float64) float64 {
	m := 0.0
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}
