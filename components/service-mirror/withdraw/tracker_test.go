package withdraw_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// A remote that has never answered since the start counts from the start: it is withdrawn
// once the policy's time has passed since then, and only then; a remote the policy does not
// name never is; each change is told to the listeners once.
func TestTrackerWithdrawsARemoteDownSinceTheStart(t *testing.T) {
	f := metrics.NewFactory(prometheus.NewRegistry(), "test")
	health := remote.NewHealth(f, time.Hour, slog.Default())
	down := func(context.Context) error { return errors.New("connection refused") }
	health.Add("aws", down)
	health.Add("gcp", down)
	var policy withdraw.Policy
	if err := policy.Decode("aws:2s"); err != nil {
		t.Fatal(err)
	}
	tr := withdraw.NewTracker(policy, []string{"aws", "gcp"}, health, withdraw.NewMetrics(f), slog.Default())
	var told []string
	tr.OnChange(func(r string) { told = append(told, r) })

	start := time.Now()
	tr.Evaluate(start.Add(time.Second))
	if tr.Withdrawn("aws") || len(told) != 0 {
		t.Fatalf("1s after the start: withdrawn %v, told %v; want nothing before 2s", tr.Withdrawn("aws"), told)
	}
	tr.Evaluate(start.Add(3 * time.Second))
	tr.Evaluate(start.Add(4 * time.Second))
	if !tr.Withdrawn("aws") || tr.Withdrawn("gcp") {
		t.Errorf("3s after the start: aws withdrawn %v, gcp %v; want aws only", tr.Withdrawn("aws"), tr.Withdrawn("gcp"))
	}
	if len(told) != 1 || told[0] != "aws" {
		t.Errorf("listeners told %v, want [aws] once", told)
	}
	var none *withdraw.Tracker
	if none.Withdrawn("aws") {
		t.Error("a nil Tracker withdraws aws")
	}
}
