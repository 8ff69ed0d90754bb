package status

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// block is an IPAMBlock as calico-ipam writes it: cidr affine to node, with each address of
// holders allocated to a pod on the node it maps to.
func block(t *testing.T, cidr, node string, holders map[netip.Addr]string) *calicoipam.Block {
	t.Helper()
	u, err := calicoipam.Object(netip.MustParsePrefix(cidr), node, holders)
	if err != nil {
		t.Fatal(err)
	}
	return calicoipam.FromUnstructured(u)
}

// awsIPAM is aws's IPAM with aws-node-1's upper block lent in part to aws-node-2's pods.
func awsIPAM(t *testing.T) calicoIPAM {
	addr := netip.MustParseAddr
	return newCalicoIPAM([]*calicoipam.Block{
		block(t, "198.18.1.192/26", "aws-node-1", map[netip.Addr]string{addr("198.18.1.201"): "aws-node-2", addr("198.18.1.200"): "aws-node-2"}),
		block(t, "198.18.1.0/26", "aws-node-1", map[netip.Addr]string{addr("198.18.1.2"): "aws-node-1"}),
		block(t, "198.18.1.64/26", "aws-node-1", nil),
		block(t, "198.18.1.128/26", "aws-node-2", map[netip.Addr]string{addr("198.18.1.130"): "aws-node-2"}),
	})
}

// A device for aws gives each peer its blocks and the borrowed addresses of its pods.
func TestCalicoPeerPrefixes(t *testing.T) {
	ipam := awsIPAM(t)
	if got, want := ipam.peerPrefixes("aws-node-2"), []string{"198.18.1.128/26", "198.18.1.200/32", "198.18.1.201/32"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-2's allowed IPs %v, want %v", got, want)
	}
	if got, want := ipam.peerPrefixes("aws-node-1"), []string{"198.18.1.0/26", "198.18.1.64/26", "198.18.1.192/26"}; !slices.Equal(got, want) {
		t.Errorf("aws-node-1's allowed IPs %v, want %v", got, want)
	}
}

// The pods column of an aws node names its blocks and what it borrowed from whose block.
func TestPodsColumnNamesBlocksAndBorrowedAddresses(t *testing.T) {
	ipam := awsIPAM(t)
	for node, want := range map[string]string{
		"aws-node-1": "blocks 198.18.1.0/26,198.18.1.64/26,198.18.1.192/26",
		"aws-node-2": "blocks 198.18.1.128/26; borrowed 198.18.1.200,198.18.1.201 from 198.18.1.192/26 (aws-node-1)",
	} {
		if got := podsColumn(layout.Node{Name: node, Cluster: "aws", PodCIDR: "198.18.1.0/25"}, ipam); got != want {
			t.Errorf("pods of %s: %q, want %q", node, got, want)
		}
	}
	if got := podsColumn(layout.Node{Name: "gcp-node-1", Cluster: "gcp", PodCIDR: "198.18.2.0/25"}, ipam); got != "198.18.2.0/25" {
		t.Errorf("pods of gcp-node-1: %q, want its pod CIDR", got)
	}
}

// A pod's block is the one holding its address, with the node it is affine to.
func TestBlockOf(t *testing.T) {
	ipam := awsIPAM(t)
	if b, ok := ipam.blockOf(netip.MustParseAddr("198.18.1.200")); !ok || b.String() != "198.18.1.192/26 (aws-node-1)" {
		t.Errorf("block of 198.18.1.200: %v %v, want 198.18.1.192/26 of aws-node-1", b, ok)
	}
	if b, ok := ipam.blockOf(netip.MustParseAddr("198.19.0.12")); ok {
		t.Errorf("block of a host-network address: %v, want none", b)
	}
}

// Without aws's blocks the status expects nothing of aws's peers, and still of the others'.
func TestUnreadBlocksExpectNothingOfCalico(t *testing.T) {
	ipam := calicoIPAM{err: errors.New("connection refused")}
	rec := &layout.Record{Nodes: &layout.Nodes{Nodes: []layout.Node{{Name: "gcp-node-1", Cluster: "gcp", PodCIDR: "198.18.2.0/25"}}}}
	if want, known := wantAllowedIPs(rec, ipam, "aws", "aws-node-1"); known {
		t.Errorf("aws-node-1's allowed IPs known (%v) without blocks", want)
	}
	if want, known := wantAllowedIPs(rec, ipam, "gcp", "gcp-node-1"); !known || !slices.Equal(want, []string{"198.18.2.0/25"}) {
		t.Errorf("gcp-node-1's allowed IPs %v (known %v), want its pod CIDR", want, known)
	}
	if got := podsColumn(layout.Node{Name: "aws-node-1", Cluster: "aws"}, ipam); got != "IPAM blocks unread" {
		t.Errorf("pods of aws-node-1 without blocks: %q", got)
	}
}
