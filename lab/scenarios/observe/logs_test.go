package observe

import (
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// A sender's statistics count the attempts of the window only, the failed ones, and
// the median and 99th percentile of their durations.
func TestSentStatsOfAWindow(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var records []podlog.Record
	for i := range 100 {
		records = append(records, podlog.Record{Time: t0.Add(time.Duration(i) * time.Second), Msg: "sent", Status: 200, Duration: (time.Duration(i+1) * time.Millisecond).String()})
	}
	records = append(records,
		podlog.Record{Time: t0.Add(50 * time.Second), Msg: "sent", Err: "timeout", Duration: "5s"},
		podlog.Record{Time: t0.Add(50 * time.Second), Msg: "request"},
		podlog.Record{Time: t0.Add(200 * time.Second), Msg: "sent", Err: "after the window", Duration: "1ms"})
	got := SentStats(records, t0, t0.Add(100*time.Second))
	want := TrafficStats{Sent: 101, Failed: 1, P50: 51 * time.Millisecond, P99: 100 * time.Millisecond}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := SentStats(nil, t0, t0.Add(time.Second)); got != (TrafficStats{}) {
		t.Errorf("no records: %+v", got)
	}
}
