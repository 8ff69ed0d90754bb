package remotepairs_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/internal/remotepairs"
)

// Items are trimmed and empty ones dropped; the remote ends at the first colon, so an IPv6
// CIDR keeps its colons; a bare item is no pair, and ":x" a pair of no remote.
func TestSplit(t *testing.T) {
	got := remotepairs.Split(" 5m, aws:fd00:1::/48,, :x ,gcp:calico-ipam,")
	want := []remotepairs.Item{
		{Text: "5m", Value: "5m"},
		{Text: "aws:fd00:1::/48", Pair: true, Remote: "aws", Value: "fd00:1::/48"},
		{Text: ":x", Pair: true, Value: "x"},
		{Text: "gcp:calico-ipam", Pair: true, Remote: "gcp", Value: "calico-ipam"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Split (-want +got):\n%s", diff)
	}
	if got := remotepairs.Split(" , "); len(got) != 0 {
		t.Errorf("Split of nothing: %v", got)
	}
}
