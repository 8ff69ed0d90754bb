package scenarios

import (
	"slices"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

func TestLongestGapIsTheLongestSilenceLessTheProbeInterval(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		answered []time.Time
		end      time.Time
		want     time.Duration
	}{
		{"every ping answered", []time.Time{at(200), at(400), at(600)}, at(800), 0},
		{"three pings lost in the middle", []time.Time{at(200), at(1000), at(1200)}, at(1400), 600 * time.Millisecond},
		{"nothing answered after 400ms", []time.Time{at(200), at(400)}, at(3000), 2400 * time.Millisecond},
		{"nothing answered at all", nil, at(5000), 4800 * time.Millisecond},
	} {
		if got := longestGap(start, tc.end, tc.answered); got != tc.want {
			t.Errorf("%s: longestGap = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestTunnelPairsJoinOneWorkloadPodPerNodeAcrossClusters(t *testing.T) {
	rec := &layout.Record{
		Nodes: &layout.Nodes{Nodes: []layout.Node{
			{Name: "aws-0", Cluster: "aws", InternalIP: "10.0.0.1"},
			{Name: "gcp-0", Cluster: "gcp", InternalIP: "10.1.0.1"},
			{Name: "gcp-1", Cluster: "gcp", InternalIP: "10.1.0.2"},
		}},
		Pods: []layout.Pod{
			{Cluster: "aws", Namespace: "logs", Name: "fluentd-b", Node: "aws-0", IP: "100.64.0.3"},
			{Cluster: "aws", Namespace: "logs", Name: "fluentd-a", Node: "aws-0", IP: "100.64.0.2"},
			{Cluster: "aws", Namespace: layout.SemaphoreNamespace, Name: "a-mirror", Node: "aws-0", IP: "100.64.0.9"},
			{Cluster: "aws", Namespace: layout.SemaphoreNamespace, Name: "a-wireguard", Node: "aws-0", IP: "10.0.0.1"},
			{Cluster: "gcp", Namespace: "logs", Name: "forwarder", Node: "gcp-0", IP: "100.65.0.2"},
			{Cluster: "gcp", Namespace: "kube-system", Name: "a-host-pod", Node: "gcp-1", IP: "10.1.0.2"},
		},
	}
	var got []string
	for _, p := range tunnelPairs(rec) {
		got = append(got, p.from.Name+" -> "+p.to.Name)
	}
	want := []string{"fluentd-a -> forwarder", "forwarder -> fluentd-a"}
	if !slices.Equal(got, want) {
		t.Errorf("tunnelPairs = %q, want %q", got, want)
	}
}
