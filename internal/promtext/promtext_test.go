package promtext_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/promtext"
)

const text = `# HELP semaphore_policy_remote_up Whether the remote answers.
# TYPE semaphore_policy_remote_up gauge
semaphore_policy_remote_up{remote="aws"} 1
semaphore_policy_remote_up{remote="merit"} 0
semaphore_policy_remote_up{remote="gcp"} NaN
# TYPE semaphore_policy_client_requests_total counter
semaphore_policy_client_requests_total{code="200",host="aws:6443",method="GET"} 40
semaphore_policy_client_requests_total{code="403",host="aws:6443",method="GET"} 2
semaphore_policy_client_requests_total{code="403",host="aws:6443",method="POST"} 1
semaphore_policy_remote_identity_info{remote="aws",user="system:serviceaccount:semaphore-remote:x"} 1
# TYPE semaphore_policy_reconcile_duration_seconds histogram
semaphore_policy_reconcile_duration_seconds_bucket{le="+Inf"} 3
semaphore_policy_reconcile_duration_seconds_sum 0.5
semaphore_policy_reconcile_duration_seconds_count 3
`

// The series of counters, gauges and untyped metrics are read with their labels; a NaN value
// is no value, a histogram is left out; and they are found by family and labels.
func TestParse(t *testing.T) {
	m, err := promtext.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	up := "semaphore_policy_remote_up"
	if got := m.Where(up); len(got) != 2 {
		t.Errorf("remote_up: %+v, want aws and merit (gcp's NaN is no value)", got)
	}
	if v, ok := m.Value(up, "remote", "merit"); !ok || v != 0 {
		t.Errorf("remote_up of merit: %v, %v", v, ok)
	}
	if _, ok := m.Value(up, "remote", "gcp"); ok {
		t.Error("remote_up of gcp: a value, want none")
	}
	requests := "semaphore_policy_client_requests_total"
	if got := m.Sum(requests, "host", "aws:6443", "code", "403"); got != 3 {
		t.Errorf("403s: %v, want 3", got)
	}
	want := []promtext.Series{{Labels: map[string]string{"remote": "aws", "user": "system:serviceaccount:semaphore-remote:x"}, Value: 1}}
	if diff := cmp.Diff(want, m.Where("semaphore_policy_remote_identity_info", "remote", "aws")); diff != "" {
		t.Errorf("untyped identity (-want +got):\n%s", diff)
	}
	if !m.Has(requests) || m.Has("semaphore_policy_remote_last_sync_timestamp_seconds") {
		t.Error("Has: want the families exported, and only those")
	}
	if m.Has("semaphore_policy_reconcile_duration_seconds") {
		t.Error("a histogram's series were read")
	}
	if _, err := promtext.Parse(strings.NewReader("not metrics {")); err == nil || !strings.Contains(err.Error(), "parsing /metrics") {
		t.Errorf("parsing garbage: %v", err)
	}
}

// A gauge of Unix seconds is a time to the nanosecond; 0 is never.
func TestTime(t *testing.T) {
	for v, want := range map[float64]time.Time{
		1.7959824125e+09: time.Unix(1795982412, 500_000_000).UTC(),
		0:                {},
		-1:               {},
		math.Inf(1):      {},
	} {
		if got := promtext.Time(v); !got.Equal(want) {
			t.Errorf("Time(%v) = %v, want %v", v, got, want)
		}
	}
}
