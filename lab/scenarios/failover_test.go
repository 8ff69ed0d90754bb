package scenarios

import (
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/lab/podlog"
)

// The longest outage runs from the first failure to the next success, or to the last attempt
// while failures last.
func TestOutage(t *testing.T) {
	at := func(ms int, ok bool) podlog.Record {
		r := podlog.Record{Msg: "sent", Time: time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond), Status: 200}
		if !ok {
			r.Status, r.Err = 0, "refused"
		}
		return r
	}
	for _, tc := range []struct {
		attempts []podlog.Record
		failed   int
		longest  time.Duration
	}{
		{nil, 0, 0},
		{[]podlog.Record{at(0, true), at(200, true)}, 0, 0},
		{[]podlog.Record{at(0, true), at(200, false), at(400, false), at(600, true), at(800, false), at(900, true)}, 3, 400 * time.Millisecond},
		{[]podlog.Record{at(0, false), at(1000, false), at(3000, false)}, 3, 3 * time.Second},
	} {
		failed, longest := outage(tc.attempts)
		if failed != tc.failed || longest != tc.longest {
			t.Errorf("outage of %d attempts = %d, %s; want %d, %s", len(tc.attempts), failed, longest, tc.failed, tc.longest)
		}
	}
}

// A window is local when only the client's cluster served, remote when only the others did.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		counts        map[string]int
		local, remote bool
	}{
		{map[string]int{"aws": 0, "gcp": 10, "merit": 0}, true, false},
		{map[string]int{"aws": 1, "gcp": 9, "merit": 0}, false, false},
		{map[string]int{"aws": 4, "gcp": 0, "merit": 6}, false, true},
		{map[string]int{"aws": 0, "gcp": 0, "merit": 0}, false, false},
	} {
		w := window{counts: tc.counts, to: time.Unix(2, 0), from: time.Unix(0, 0)}
		if w.local() != tc.local || w.remote() != tc.remote {
			t.Errorf("%s: local %v remote %v, want %v %v", w, w.local(), w.remote(), tc.local, tc.remote)
		}
	}
}
