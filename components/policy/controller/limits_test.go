package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
)

// Whatever order sets gain and lose addresses in, the sets made are the first maxSets by name
// of those with addresses, each sync learns whether its own set is one, and the one other set
// whose standing it changed is handed back to be synced again; over_limit counts the rest.
func TestLimitsMakeTheFirstSetsByNameInAnyOrder(t *testing.T) {
	const maxSets = 3
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "over_limit", Help: "test"}, []string{"remote", "what"})
	src := func(i int) netset.Source {
		return netset.Source{Cluster: "gcp", Namespace: "ns", Name: fmt.Sprintf("s%02d", i)}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		// The caches at start: a random half of twelve sets have addresses.
		has := map[int]bool{}
		for i := range 12 {
			has[i] = rng.IntN(2) == 0
		}
		l := newLimits("gcp", maxSets, 10, gauge)
		atStart := func() []netset.Source {
			var out []netset.Source
			for i := range 12 {
				if has[i] {
					out = append(out, src(i))
				}
			}
			return out
		}
		made := func() map[string]bool { // the model: the first maxSets by name with addresses
			out := map[string]bool{}
			for _, s := range atStart() {
				if len(out) < maxSets {
					out[netset.SetName(s)] = true
				}
			}
			return out
		}
		for step := range 40 {
			before := made()
			i := rng.IntN(12)
			if step > 0 { // the first sync finds the caches as they were at start
				has[i] = rng.IntN(2) == 0
			}
			after := made()
			within, _, crossed := l.place(src(i), has[i], atStart)
			name := netset.SetName(src(i))
			if within != after[name] {
				t.Fatalf("round %d step %d: %s made=%v, want %v", round, step, name, within, after[name])
			}
			var changed []string
			for _, s := range []map[string]bool{before, after} {
				for n := range s {
					if before[n] != after[n] && n != name && !slices.Contains(changed, n) {
						changed = append(changed, n)
					}
				}
			}
			var got []string
			if crossed != nil {
				got = []string{netset.SetName(*crossed)}
			}
			if !slices.Equal(got, changed) {
				t.Fatalf("round %d step %d: %s crossed %v, want %v", round, step, name, got, changed)
			}
			withAddresses := len(atStart())
			if v := value(gauge.WithLabelValues("gcp", overSets)); v != float64(max(0, withAddresses-maxSets)) {
				t.Fatalf("round %d step %d: over_limit{sets} = %v with %d sets", round, step, v, withAddresses)
			}
		}
	}
}

// The members of a set beyond maxMembers are the last by address; over_limit counts them over
// all the remote's sets, and a set left out is logged once, when it first is.
func TestLimitsKeepTheFirstMembers(t *testing.T) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "over_limit", Help: "test"}, []string{"remote", "what"})
	l := newLimits("gcp", 10, 2, gauge)
	a := netset.Source{Cluster: "gcp", Namespace: "ns", Name: "a"}
	b := netset.Source{Cluster: "gcp", Namespace: "ns", Name: "b"}
	members := func() float64 { return value(gauge.WithLabelValues("gcp", overMembers)) }

	kept, out, newly := l.members(a, []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"})
	if !slices.Equal(kept, []string{"10.0.0.1/32", "10.0.0.2/32"}) || out != 1 || !newly || members() != 1 {
		t.Errorf("a: kept %v, left out %d (newly %v), over_limit %v", kept, out, newly, members())
	}
	if _, _, newly := l.members(a, []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32"}); newly || members() != 2 {
		t.Errorf("a again: newly %v, over_limit %v; want logged once, 2", newly, members())
	}
	if _, _, _ = l.members(b, []string{"10.0.1.1/32", "10.0.1.2/32", "10.0.1.3/32"}); members() != 3 {
		t.Errorf("a and b: over_limit %v, want 3", members())
	}
	if kept, out, _ := l.members(a, []string{"10.0.0.1/32"}); len(kept) != 1 || out != 0 || members() != 1 {
		t.Errorf("a within: kept %v, left out %d, over_limit %v", kept, out, members())
	}
	// A set that goes (no addresses) no longer counts.
	l.place(b, false, func() []netset.Source { return nil })
	if members() != 0 {
		t.Errorf("b gone: over_limit %v, want 0", members())
	}
}

// value is the value of a gauge.
func value(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		panic(err)
	}
	return m.GetGauge().GetValue()
}
