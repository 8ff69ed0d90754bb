package addrguard_test

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A refusal is counted the first time, not while it stays, and again after it went away; per
// object, by remote and reason. A nil Reporter reports nothing.
func TestReporterCountsEachRefusalOnce(t *testing.T) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "refused_addresses_total", Help: "h"}, []string{"remote", "reason"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(counter)
	count := func(reason string) float64 {
		v, _ := testenv.MetricSeries(t, reg, "refused_addresses_total", map[string]string{"remote": "aws", "reason": reason})
		return v
	}
	r := addrguard.NewReporter(counter, slog.New(slog.DiscardHandler))
	a := addrguard.Refused{Source: "ns/p1", Addr: "169.254.169.254", Reason: addrguard.ReasonSpecial}
	b := addrguard.Refused{Source: "ns/p2", Addr: "198.51.100.1", Reason: addrguard.ReasonOutsideRanges}
	for i, step := range []struct {
		object           string
		refused          []addrguard.Refused
		special, outside float64 // the counts after the step
	}{
		{"set-1", []addrguard.Refused{a}, 1, 0},
		{"set-1", []addrguard.Refused{a, a}, 1, 0},
		{"set-1", []addrguard.Refused{a, b}, 1, 1},
		{"set-2", []addrguard.Refused{a}, 2, 1}, // per object
		{"set-1", nil, 2, 1},
		{"set-1", []addrguard.Refused{b}, 2, 2}, // gone, then back
	} {
		r.Report("aws", step.object, step.refused)
		special, outside := count(addrguard.ReasonSpecial), count(addrguard.ReasonOutsideRanges)
		if special != step.special || outside != step.outside {
			t.Errorf("step %d (%s %v): counted %v special, %v outside; want %v, %v", i, step.object, step.refused, special, outside, step.special, step.outside)
		}
	}
	var none *addrguard.Reporter
	none.Report("aws", "set-1", []addrguard.Refused{a})
}
