package status

import (
	"slices"
	"testing"

	"github.com/kube-semaphore/semaphore/lab/env"
)

// A device for aws gives each peer its blocks and the borrowed addresses of its pods.
func TestCalicoPeerPrefixes(t *testing.T) {
	rec := &env.Record{Pods: []env.Pod{
		{Cluster: "aws", Node: "aws-node-2", IP: "198.18.1.201"},
		{Cluster: "aws", Node: "aws-node-2", IP: "198.18.1.200"},
		{Cluster: "aws", Node: "aws-node-2", IP: "198.19.0.12"}, // host network
		{Cluster: "aws", Node: "aws-node-1", IP: "198.18.1.2"},
		{Cluster: "gcp", Node: "gcp-node-2", IP: "198.18.1.202"},
	}}
	if got, want := calicoPeerPrefixes(rec, "aws-node-2"), []string{"198.18.1.128/26", "198.18.1.200/32", "198.18.1.201/32"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-2's allowed IPs %v, want %v", got, want)
	}
	if got, want := calicoPeerPrefixes(rec, "aws-node-1"), []string{"198.18.1.0/26", "198.18.1.64/26", "198.18.1.192/26"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-1's allowed IPs %v, want %v", got, want)
	}
}
