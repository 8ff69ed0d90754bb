package testenv

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Eventually retries check until it returns nil, failing the test with check's last error
// when timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Hold fails the test unless check keeps returning nil for d.
func Hold(t testing.TB, d time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MetricSeries returns the sum and the number of the series of name in reg whose labels
// include labels: counters and gauges give their value, histograms their observation count.
func MetricSeries(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) (sum float64, n int) {
	t.Helper()
	eachSeries(t, reg, name, labels, func(m *dto.Metric) {
		n++
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	})
	return sum, n
}

// HistogramSeries returns the sum and the count of the observations of the histogram name in
// reg, over its series whose labels include labels.
func HistogramSeries(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) (sum float64, count uint64) {
	t.Helper()
	eachSeries(t, reg, name, labels, func(m *dto.Metric) {
		sum += m.GetHistogram().GetSampleSum()
		count += m.GetHistogram().GetSampleCount()
	})
	return sum, count
}

// eachSeries calls f with every series of name in reg whose labels include labels.
func eachSeries(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string, f func(*dto.Metric)) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if hasLabels(m, labels) {
				f(m)
			}
		}
	}
}

func hasLabels(m *dto.Metric, labels map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if got[k] != v {
			return false
		}
	}
	return true
}

// LogWriter sends what is written to it (a controller's log) to the test's log, shown only on
// failure or with -v.
func LogWriter(t testing.TB) *TestLog { return &TestLog{t: t} }

// TestLog is the writer LogWriter returns.
type TestLog struct{ t testing.TB }

func (w *TestLog) Write(p []byte) (int, error) {
	w.t.Helper()
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Buffer is a bytes.Buffer that a process or goroutine writes while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
