package observe

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// Requests are a client's requests as the sample program logs them: the client's log says what
// it sent and how that went, the servers' logs whom they served.
type Requests struct {
	Client layout.Pod
	// Servers are the pods whose logs count.
	Servers []layout.Pod
}

// Served counts the client's requests that the servers logged in [from, to), by cluster.
func (q Requests) Served(from, to time.Time) (map[string]int, error) {
	counts := map[string]int{}
	for _, c := range layout.ClusterNames() {
		counts[c] = 0
	}
	for _, p := range q.Servers {
		records, err := ReadLog(p.Log)
		if err != nil {
			return counts, err
		}
		for _, r := range records {
			if r.Msg == "request" && r.Client == q.Client.IP && !r.Time.Before(from) && r.Time.Before(to) {
				counts[p.Cluster]++
			}
		}
	}
	return counts, nil
}

// Attempts are the client's attempts in [from, to).
func (q Requests) Attempts(from, to time.Time) ([]podlog.Record, error) {
	records, err := ReadLog(q.Client.Log)
	var out []podlog.Record
	for _, r := range records {
		if r.Msg == "sent" && !r.Time.Before(from) && r.Time.Before(to) {
			out = append(out, r)
		}
	}
	return out, err
}

// FirstServed waits until one of the servers logs a request of the client at or after since,
// and returns its time.
func (q Requests) FirstServed(ctx context.Context, since time.Time, timeout time.Duration) (time.Time, bool, error) {
	var first time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, p := range q.Servers {
			records, err := ReadLog(p.Log)
			if err != nil {
				return false, err
			}
			for _, r := range records {
				if r.Msg == "request" && r.Client == q.Client.IP && !r.Time.Before(since) && (first.IsZero() || r.Time.Before(first)) {
					first = r.Time
				}
			}
		}
		return !first.IsZero(), nil
	})
	if wait.Interrupted(err) {
		return first, false, ctx.Err()
	}
	return first, err == nil, err
}
