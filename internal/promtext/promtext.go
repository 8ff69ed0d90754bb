// Package promtext reads what the Semaphore components serve on /metrics, the Prometheus text
// exposition: Parse makes it series by family, which the plugin's checks and views and the
// lab's status query by label.
package promtext

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are what one /metrics says: the series of each metric family, by family name.
type Metrics map[string][]Series

// Series is one series: its labels and value.
type Series struct {
	Labels map[string]string
	Value  float64
}

// Parse parses the Prometheus text exposition of a /metrics: the series of its counters, gauges
// and untyped metrics. A series whose value is NaN has no value and is left out, and so are
// histograms and summaries.
func Parse(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	out := Metrics{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := Series{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Untyped != nil: // exposed without a TYPE line
				s.Value = m.GetUntyped().GetValue()
			default:
				continue
			}
			if !math.IsNaN(s.Value) {
				out[name] = append(out[name], s)
			}
		}
	}
	return out, nil
}

// Has reports whether the metrics hold family at all: the version that serves them has the
// metric.
func (m Metrics) Has(family string) bool {
	_, ok := m[family]
	return ok
}

// Where are the series of family whose labels hold each of match, given as name, value pairs.
func (m Metrics) Where(family string, match ...string) []Series {
	var out []Series
	for _, s := range m[family] {
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			ok = ok && s.Labels[match[i]] == match[i+1]
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// Value is the value of the first series of family that matches, and whether there is one.
func (m Metrics) Value(family string, match ...string) (float64, bool) {
	if found := m.Where(family, match...); len(found) > 0 {
		return found[0].Value, true
	}
	return 0, false
}

// Sum is the sum of the series of family that match.
func (m Metrics) Sum(family string, match ...string) float64 {
	total := 0.0
	for _, s := range m.Where(family, match...) {
		total += s.Value
	}
	return total
}

// Time is the time of a gauge of Unix seconds, such as a last handshake or sync; zero for 0
// (never) and for what is no time.
func Time(v float64) time.Time {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
