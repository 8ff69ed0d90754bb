package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

var clientGoOnce sync.Once

// ClientGo creates the API client request metrics on f and hooks them into client-go.
//
// client-go accepts exactly one set of request metrics per process (tools/metrics.Register is
// guarded by a sync.Once), so only the first factory in a process receives observations. A
// component binary has exactly one; tests that start several controllers in one process see
// the request metrics of the first only.
func ClientGo(f *Factory) {
	requests := f.CounterVec("client_requests_total", "API requests made, by host (API server), method and HTTP status code.", "host", "method", "code")
	latency := f.HistogramVec("client_request_duration_seconds", "Latency of API requests, by host (API server) and verb.", LatencyBuckets, "host", "verb")
	rateLimited := f.HistogramVec("client_rate_limiter_duration_seconds", "Time API requests waited for the client-side rate limiter, by host (API server) and verb.", LatencyBuckets, "host", "verb")
	clientGoOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestResult:      resultAdapter{requests},
			RequestLatency:     latencyAdapter{latency},
			RateLimiterLatency: latencyAdapter{rateLimited},
		})
	})
}

type resultAdapter struct{ v *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.v.WithLabelValues(host, method, code).Inc()
}

type latencyAdapter struct{ v *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.v.WithLabelValues(u.Host, verb).Observe(latency.Seconds())
}
