package addrguard

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// Refused is one address a remote published that the guard refused: what published it (a pod,
// an EndpointSlice), the address, and why.
type Refused struct {
	Source, Addr, Reason string
}

// once remembers, per object (a set, a mirror), the refusals reported last, so that each is
// logged and counted once: when it is first refused, not again on every sync while it stays.
// Its methods may be called from several goroutines.
type once struct {
	mu   sync.Mutex
	last map[string]map[Refused]bool
}

// fresh records refused as object's refusals now and returns those that were not among them
// before. An object with no refusals is forgotten.
func (o *once) fresh(object string, refused []Refused) []Refused {
	o.mu.Lock()
	defer o.mu.Unlock()
	before := o.last[object]
	var out []Refused
	now := make(map[Refused]bool, len(refused))
	for _, r := range refused {
		if !before[r] && !now[r] {
			out = append(out, r)
		}
		now[r] = true
	}
	if len(now) == 0 {
		delete(o.last, object)
		return nil
	}
	if o.last == nil {
		o.last = map[string]map[Refused]bool{}
	}
	o.last[object] = now
	return out
}

// Reporter logs and counts each refusal once, by remote and reason.
type Reporter struct {
	once    once
	counter *prometheus.CounterVec // labels: remote, reason
	log     *slog.Logger
}

// RefusedMetric is the counter of a Reporter, on f: refused_addresses_total{remote, reason}; what
// says what was done with them ("were kept out of the sets"); more are the reasons of the
// component's own besides the guard's.
func RefusedMetric(f *metrics.Factory, what string, more ...string) *prometheus.CounterVec {
	reasons := strings.Join(append([]string{ReasonSpecial, ReasonOutsideRanges, ReasonLocal, ReasonOtherRemote}, more...), ", ")
	return f.CounterVec("refused_addresses_total", "Addresses a remote published that "+what+", because the remote may not publish them (docs/security.md), "+
		"each counted once, when first refused, by remote and reason: "+reasons+".", "remote", "reason")
}

// NewReporter reports on counter, whose labels are remote and reason, and log.
func NewReporter(counter *prometheus.CounterVec, log *slog.Logger) *Reporter {
	return &Reporter{counter: counter, log: log}
}

// Report records the refusals of object (what the component writes: a set, a mirror) from
// remote, and logs and counts those not reported before. A nil Reporter reports nothing.
func (r *Reporter) Report(remote, object string, refused []Refused) {
	if r == nil {
		return
	}
	for _, f := range r.once.fresh(remote+"/"+object, refused) {
		r.counter.WithLabelValues(remote, f.Reason).Inc()
		r.log.Warn("address the remote may not publish is left out", "remote", remote, "object", object,
			"source", f.Source, "address", f.Addr, "reason", f.Reason)
	}
}
