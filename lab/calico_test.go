package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/helmchart"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// aws's blocks are those docs/lab.md describes: aws-node-1's range in two blocks of its own,
// aws-node-2's lower half its own and its upper half aws-node-1's, from which aws-node-2's CNI
// hands out the addresses its pods borrow; a device for aws gives each peer its blocks and
// the borrowed addresses of its pods.
func TestCalicoBlocks(t *testing.T) {
	var got []string
	for _, b := range calicoBlocks() {
		got = append(got, fmt.Sprintf("%s %s", b.CIDR, b.Node))
	}
	want := []string{"198.18.1.0/26 aws-node-1", "198.18.1.64/26 aws-node-1", "198.18.1.128/26 aws-node-2", "198.18.1.192/26 aws-node-1"}
	if !slices.Equal(got, want) {
		t.Errorf("blocks %v, want %v", got, want)
	}
	if start, end, ok := calicoBorrowed("aws-node-2"); !ok || start != "198.18.1.200" || end != "198.18.1.250" {
		t.Errorf("aws-node-2's CNI range %s-%s (%v), want 198.18.1.200-198.18.1.250", start, end, ok)
	}
	if _, _, ok := calicoBorrowed("aws-node-1"); ok {
		t.Error("aws-node-1 borrows")
	}
	st := &State{Pods: []PodState{
		{Cluster: "aws", Node: "aws-node-2", IP: "198.18.1.201"},
		{Cluster: "aws", Node: "aws-node-2", IP: "198.18.1.200"},
		{Cluster: "aws", Node: "aws-node-2", IP: "198.19.0.12"}, // host network
		{Cluster: "aws", Node: "aws-node-1", IP: "198.18.1.2"},
		{Cluster: "gcp", Node: "gcp-node-2", IP: "198.18.1.202"},
	}}
	if got, want := calicoPeerPrefixes(st, "aws-node-2"), []string{"198.18.1.128/26", "198.18.1.200/32", "198.18.1.201/32"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-2's allowed IPs %v, want %v", got, want)
	}
	if got, want := calicoPeerPrefixes(st, "aws-node-1"), []string{"198.18.1.0/26", "198.18.1.64/26", "198.18.1.192/26"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-1's allowed IPs %v, want %v", got, want)
	}
}

// The umbrella values the lab gives gcp and merit make their semaphore-wireguard read aws's
// pod addresses from its IPAM blocks, and leave the others to their Nodes; every cluster holds
// each remote to that remote's pod range.
func TestUmbrellaValuesReadCalicoIPAM(t *testing.T) {
	for cluster, want := range map[string]string{"gcp": "aws:calico-ipam", "merit": "aws:calico-ipam", "aws": "node"} {
		l := &lab{registry: "127.0.0.1:5000", remoteEntries: map[string][]remoteEntry{}}
		for _, r := range remotesOf(cluster) {
			// As kubectl semaphore link writes it.
			l.remoteEntries[cluster] = append(l.remoteEntries[cluster], remoteEntry{
				"name": r, "server": "https://127.0.0.1:6443", "caData": "Q0EK",
				"tokenSecret": map[string]any{"name": "semaphore-remote-" + r, "key": "token"},
			})
		}
		rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), umbrellaRelease, semaphoreNamespace, l.umbrellaValues(cluster))
		if err != nil {
			t.Fatalf("%s: %v", cluster, err)
		}
		if !strings.Contains(rel.Manifest, "name: SEMAPHORE_WG_POD_CIDRS_FROM\n              value: \""+want+"\"") {
			t.Errorf("%s: SEMAPHORE_WG_POD_CIDRS_FROM is not %q:\n%s", cluster, want, rel.Manifest)
		}
		var ranges []string
		for _, r := range remotesOf(cluster) {
			ranges = append(ranges, r+":"+specOf(r).PodCIDR)
		}
		if want := strings.Join(ranges, ","); !strings.Contains(rel.Manifest, "name: SEMAPHORE_REMOTE_POD_RANGES\n              value: \""+want+"\"") {
			t.Errorf("%s: SEMAPHORE_REMOTE_POD_RANGES is not %q", cluster, want)
		}
	}
}
