package check

import (
	"testing"
	"time"
)

// The handshakes are read from an agent's metrics as Prometheus exposes them, other series
// ignored.
func TestParseHandshakes(t *testing.T) {
	text := `# HELP semaphore_wg_peer_last_handshake_timestamp_seconds Unix time of the last handshake with a peer (0 before the first), by remote and peer node.
# TYPE semaphore_wg_peer_last_handshake_timestamp_seconds gauge
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-node-1",remote="aws"} 1.7e+09
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-node-2",remote="aws"} 0
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="merit-node-1",remote="merit"} 1.6e+09
# TYPE semaphore_wg_peers gauge
semaphore_wg_peers{device="wg-aws",remote="aws"} 2
`
	hs, err := ParseHandshakes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || len(hs["aws"]) != 2 || hs["aws"]["aws-node-1"] != 1.7e9 || hs["aws"]["aws-node-2"] != 0 || hs["merit"]["merit-node-1"] != 1.6e9 {
		t.Errorf("handshakes %v", hs)
	}
	if hs, err := ParseHandshakes([]byte("up 1\n")); err != nil || len(hs) != 0 {
		t.Errorf("without the metric: %v, %v", hs, err)
	}
	if _, err := ParseHandshakes([]byte("not { metrics\n")); err == nil {
		t.Error("garbage parses")
	}
}

// A peer fails when it never handshook or its last handshake is older than the limit.
func TestStaleHandshake(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		ts   float64
		want string
	}{
		{0, "never handshook"},
		{float64(now.Unix() - 30), ""},
		{float64(now.Unix() - 180), ""},
		{float64(now.Unix() - 181), "last handshake 3m1s ago"},
		{float64(now.Unix() + 5), ""}, // clock skew between the node and here
	} {
		if got := StaleHandshake(c.ts, now, 3*time.Minute); got != c.want {
			t.Errorf("StaleHandshake(%v) = %q, want %q", c.ts, got, c.want)
		}
	}
}

// SEMAPHORE_WG_POD_CIDRS_FROM is one source for every remote or remote:source pairs.
func TestPodCIDRsFrom(t *testing.T) {
	for _, c := range []struct{ value, remote, want string }{
		{"", "aws", "node"},
		{"calico-ipam", "aws", "calico-ipam"},
		{"aws:calico-ipam,merit:node", "aws", "calico-ipam"},
		{"aws:calico-ipam,merit:node", "merit", "node"},
		{"aws:calico-ipam", "gcp", "node"},
	} {
		if got := podCIDRsFrom(c.value, c.remote); got != c.want {
			t.Errorf("podCIDRsFrom(%q, %q) = %q, want %q", c.value, c.remote, got, c.want)
		}
	}
}

// What is allowed is never also forbidden, and reading what no component needs is.
func TestForbidden(t *testing.T) {
	allowed := append(services.with("list", "watch"), endpointSlices.with("list", "watch")...)
	deny := forbidden(allowed)
	for _, p := range deny {
		for _, a := range allowed {
			if p == a {
				t.Errorf("%s is both needed and forbidden", p)
			}
		}
	}
	for _, p := range []probe{{Resource: "pods", Verb: "list"}, {Resource: "nodes", Verb: "list"}, {Resource: "secrets", Verb: "get"}, {Resource: "services", Verb: "create"}} {
		found := false
		for _, d := range deny {
			found = found || d == p
		}
		if !found {
			t.Errorf("%s is not forbidden", p)
		}
	}
}
