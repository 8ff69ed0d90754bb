package addrguard_test

import (
	"fmt"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// A refusal is new the first time, not while it stays, and new again after it went away.
func TestOnceReportsEachRefusalOnce(t *testing.T) {
	var o addrguard.Once
	a := addrguard.Refused{Source: "ns/p1", Addr: "169.254.169.254", Reason: addrguard.ReasonSpecial}
	b := addrguard.Refused{Source: "ns/p2", Addr: "198.51.100.1", Reason: addrguard.ReasonOutsideRanges}
	for i, step := range []struct {
		object  string
		refused []addrguard.Refused
		want    string
	}{
		{"set-1", []addrguard.Refused{a}, fmt.Sprint([]addrguard.Refused{a})},
		{"set-1", []addrguard.Refused{a, a}, "[]"},
		{"set-1", []addrguard.Refused{a, b}, fmt.Sprint([]addrguard.Refused{b})},
		{"set-2", []addrguard.Refused{a}, fmt.Sprint([]addrguard.Refused{a})}, // per object
		{"set-1", nil, "[]"},
		{"set-1", []addrguard.Refused{b}, fmt.Sprint([]addrguard.Refused{b})},
	} {
		if got := fmt.Sprint(o.New(step.object, step.refused)); got != step.want {
			t.Errorf("step %d: New(%s, %v) = %s, want %s", i, step.object, step.refused, got, step.want)
		}
	}
}
