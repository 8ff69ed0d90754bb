package testenv_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// MetricSeries sums the matching series of counters and gauges (a histogram counts its
// observations); HistogramSeries sums a histogram's observations and counts them.
func TestMetricAndHistogramSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	writes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "writes_total", Help: "Writes."}, []string{"remote", "verb"})
	took := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "took_seconds", Help: "Time taken."}, []string{"remote"})
	reg.MustRegister(writes, took)
	writes.WithLabelValues("aws", "create").Add(3)
	writes.WithLabelValues("aws", "delete").Add(1)
	writes.WithLabelValues("gcp", "create").Add(5)
	took.WithLabelValues("aws").Observe(0.5)
	took.WithLabelValues("gcp").Observe(1.5)
	took.WithLabelValues("gcp").Observe(2)

	if sum, n := testenv.MetricSeries(t, reg, "writes_total", map[string]string{"remote": "aws"}); sum != 4 || n != 2 {
		t.Errorf("MetricSeries(aws) = %v over %d series, want 4 over 2", sum, n)
	}
	if sum, n := testenv.MetricSeries(t, reg, "took_seconds", nil); sum != 3 || n != 2 {
		t.Errorf("MetricSeries(histogram) = %v over %d series, want 3 observations over 2", sum, n)
	}
	if sum, count := testenv.HistogramSeries(t, reg, "took_seconds", map[string]string{"remote": "gcp"}); sum != 3.5 || count != 2 {
		t.Errorf("HistogramSeries(gcp) = %v, %d; want 3.5, 2", sum, count)
	}
	if sum, n := testenv.MetricSeries(t, reg, "absent", nil); sum != 0 || n != 0 {
		t.Errorf("MetricSeries(absent) = %v, %d; want nothing", sum, n)
	}
}

// Buffer takes writes from many goroutines while it is read.
func TestBufferConcurrentWrites(t *testing.T) {
	var b testenv.Buffer
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			fmt.Fprintf(&b, "%d\n", i)
			_ = b.String()
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 20 {
		t.Errorf("Buffer holds %d bytes, want 20", got)
	}
}

// SkipForMissing skips outside CI and fails in CI (CI=true), with the same message.
func TestSkipForMissingFailsInCI(t *testing.T) {
	for _, tc := range []struct {
		ci                    string
		wantSkip, wantFailure string
	}{
		{ci: "", wantSkip: "needs containerd (installed by x)"},
		{ci: "false", wantSkip: "needs containerd (installed by x)"},
		{ci: "true", wantFailure: "in CI, where make test installs it first: needs containerd (installed by x)"},
	} {
		t.Setenv("CI", tc.ci)
		rec := &outcomeTB{TB: t}
		testenv.SkipForMissing(rec, "needs %s (installed by %s)", "containerd", "x")
		if rec.skipped != tc.wantSkip || rec.failed != tc.wantFailure {
			t.Errorf("CI=%q: skipped %q, failed %q; want skipped %q, failed %q", tc.ci, rec.skipped, rec.failed, tc.wantSkip, tc.wantFailure)
		}
	}
}

// outcomeTB records a Skipf or Fatalf instead of ending the test.
type outcomeTB struct {
	testing.TB
	skipped, failed string
}

func (o *outcomeTB) Helper()                        {}
func (o *outcomeTB) Skipf(format string, a ...any)  { o.skipped = fmt.Sprintf(format, a...) }
func (o *outcomeTB) Fatalf(format string, a ...any) { o.failed = fmt.Sprintf(format, a...) }
