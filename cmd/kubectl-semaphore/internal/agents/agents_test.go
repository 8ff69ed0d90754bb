package agents_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
)

const wgMetrics = `# HELP semaphore_wg_peer_last_handshake_timestamp_seconds Unix time of the last handshake with a peer (0 before the first), by remote and peer node.
# TYPE semaphore_wg_peer_last_handshake_timestamp_seconds gauge
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-1",remote="aws"} 1.7959824e+09
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-2",remote="aws"} 0
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="merit-1",remote="merit"} 1.7959824125e+09
# HELP semaphore_wg_peers Peers configured on the device of a remote, by device and remote.
# TYPE semaphore_wg_peers gauge
semaphore_wg_peers{device="wg-aws",remote="aws"} 2
`

// The peers are read from an agent's metrics as Prometheus exposes them, other series ignored.
func TestParsePeers(t *testing.T) {
	got, err := agents.ParsePeers(strings.NewReader(wgMetrics), "gcp-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []agents.Peer{
		{Node: "gcp-1", Remote: "aws", Peer: "aws-1", LastHandshake: time.Unix(1795982400, 0).UTC()},
		{Node: "gcp-1", Remote: "aws", Peer: "aws-2"},
		{Node: "gcp-1", Remote: "merit", Peer: "merit-1", LastHandshake: time.Unix(1795982412, 500_000_000).UTC()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	if _, err := agents.ParsePeers(strings.NewReader("not metrics {"), "gcp-1"); err == nil {
		t.Error("parsing garbage: no error")
	}
	untyped := `semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-1",remote="aws"} 1795982400` + "\n"
	if got, err := agents.ParsePeers(strings.NewReader(untyped), "gcp-1"); err != nil || len(got) != 1 || got[0].LastHandshake.Unix() != 1795982400 {
		t.Errorf("without a TYPE line: %v, %v", got, err)
	}
	if got, err := agents.ParsePeers(strings.NewReader("# no peers yet\n"), "gcp-1"); err != nil || len(got) != 0 {
		t.Errorf("no peers: %v, %v", got, err)
	}
}

// A peer is stale when it never handshook or its last handshake is older than the limit.
func TestStale(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "never handshook"},
		{now.Add(-30 * time.Second), ""},
		{now.Add(-180 * time.Second), ""},
		{now.Add(-181 * time.Second), "last handshake 3m1s ago"},
		{now.Add(5 * time.Second), ""}, // clock skew between the node and here
	} {
		if got := agents.Stale(c.at, now, agents.MaxHandshakeAge); got != c.want {
			t.Errorf("Stale(%v) = %q, want %q", c.at, got, c.want)
		}
	}
}
