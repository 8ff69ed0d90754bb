package observe

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// ReadLog reads the records of a pod's log; a log that is gone (its pod deleted) has none.
func ReadLog(path string) ([]podlog.Record, error) {
	records, err := podlog.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return records, err
}

// TrafficStats are the attempts of senders in a window: how many, how many failed, and their
// durations' median and 99th percentile.
type TrafficStats struct {
	Sent, Failed int
	P50, P99     time.Duration
}

func (t TrafficStats) String() string {
	return fmt.Sprintf("%d requests, %d failed, p50 %s, p99 %s", t.Sent, t.Failed, roundDuration(t.P50), roundDuration(t.P99))
}

// roundDuration keeps three digits or so.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}

// SentStats are the statistics of the "sent" records in [from, to).
func SentStats(records []podlog.Record, from, to time.Time) TrafficStats {
	var s TrafficStats
	var durations []time.Duration
	for _, r := range records {
		if r.Msg != "sent" || r.Time.Before(from) || !r.Time.Before(to) {
			continue
		}
		s.Sent++
		if r.Failed() {
			s.Failed++
		}
		if d, err := time.ParseDuration(r.Duration); err == nil {
			durations = append(durations, d)
		}
	}
	slices.Sort(durations)
	s.P50, s.P99 = percentile(durations, 0.50), percentile(durations, 0.99)
	return s
}

// percentile is the q-th quantile of sorted (nearest rank), 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// SenderStats reads the logs of pods and returns the statistics of their attempts in the window.
func SenderStats(pods []layout.Pod, from, to time.Time) (TrafficStats, error) {
	var all []podlog.Record
	for _, p := range pods {
		records, err := ReadLog(p.Log)
		if err != nil {
			return TrafficStats{}, err
		}
		all = append(all, records...)
	}
	return SentStats(all, from, to), nil
}
