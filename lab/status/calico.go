package status

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// What the status expects of the Calico-way cluster (layout.CalicoCluster): calico-ipam allocates
// its pods' addresses from blocks of the IPPools the lab creates, each block affine to a node,
// and lends addresses of a node's blocks to pods on other nodes when theirs are full. A device
// for the cluster gives each peer what calicoipam.Prefixes gives its node, as
// semaphore-wireguard does: the node's blocks and the addresses its pods borrowed.

// IPAMBlock is a block of the Calico-way cluster and the node it is affine to ("" for none).
type IPAMBlock struct {
	CIDR netip.Prefix
	Node string
}

// String is the block and its node, as the status prints them.
func (b IPAMBlock) String() string {
	if !b.CIDR.IsValid() {
		return "no IPAM block"
	}
	node := b.Node
	if node == "" {
		node = "no node"
	}
	return fmt.Sprintf("%s (%s)", b.CIDR, node)
}

// calicoIPAM is what the status read of the Calico-way cluster's IPAM: its live blocks, by
// address, and the prefixes of each node. With err (the blocks could not be read) it knows
// nothing, and the status expects nothing of the cluster's addresses.
type calicoIPAM struct {
	blocks   []IPAMBlock
	prefixes map[string][]netip.Prefix
	err      error
}

// newCalicoIPAM is what blocks, as calico-ipam wrote them, say of the cluster's addresses.
func newCalicoIPAM(blocks []*calicoipam.Block) calicoIPAM {
	var out calicoIPAM
	out.prefixes, _ = calicoipam.Prefixes(blocks, nil)
	for _, b := range blocks {
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil || b.Deleted || b.DeletionTimestamp != nil {
			continue
		}
		node, affine := strings.CutPrefix(b.Affinity, "host:")
		if !affine {
			node = ""
		}
		out.blocks = append(out.blocks, IPAMBlock{cidr.Masked(), node})
	}
	slices.SortFunc(out.blocks, func(a, b IPAMBlock) int { return a.CIDR.Addr().Compare(b.CIDR.Addr()) })
	return out
}

// blockOf is the block that holds addr.
func (c calicoIPAM) blockOf(addr netip.Addr) (IPAMBlock, bool) {
	i := slices.IndexFunc(c.blocks, func(b IPAMBlock) bool { return b.CIDR.Contains(addr) })
	if i < 0 {
		return IPAMBlock{}, false
	}
	return c.blocks[i], true
}

// peerPrefixes are the prefixes a device for the Calico-way cluster must give the peer for
// node: the blocks affine to it, and the addresses its pods borrowed from the others' blocks,
// sorted.
func (c calicoIPAM) peerPrefixes(node string) []string {
	var out []string
	for _, p := range c.prefixes[node] {
		out = append(out, p.String())
	}
	return out
}

// podsOf is where node's pods' addresses come from: the blocks affine to it, and the addresses
// it borrowed from each block of another node.
func (c calicoIPAM) podsOf(node string) string {
	if c.err != nil {
		return "IPAM blocks unread"
	}
	var own, borrowed []string
	for _, b := range c.blocks {
		if b.Node == node {
			own = append(own, b.CIDR.String())
			continue
		}
		var addrs []string
		for _, p := range c.prefixes[node] {
			if p.IsSingleIP() && b.CIDR.Contains(p.Addr()) {
				addrs = append(addrs, p.Addr().String())
			}
		}
		if len(addrs) > 0 {
			borrowed = append(borrowed, fmt.Sprintf("borrowed %s from %s", strings.Join(addrs, ","), b))
		}
	}
	s := "no blocks"
	if len(own) > 0 {
		s = "blocks " + strings.Join(own, ",")
	}
	return strings.Join(append([]string{s}, borrowed...), "; ")
}

// podsColumn is what the status says of where node n's pods' addresses come from: its pod
// CIDR, or in the Calico-way cluster its IPAM blocks and the addresses it borrowed.
func podsColumn(n layout.Node, ipam calicoIPAM) string {
	if n.Cluster != layout.CalicoCluster {
		return n.PodCIDR
	}
	return ipam.podsOf(n.Name)
}

// wantAllowedIPs are the allowed IPs a device for remote must give the peer for node: the
// node's pod CIDR, or in the Calico-way cluster its peerPrefixes; none (false) when the
// Calico-way cluster's blocks could not be read.
func wantAllowedIPs(rec *layout.Record, ipam calicoIPAM, remote, node string) ([]string, bool) {
	if remote == layout.CalicoCluster {
		return ipam.peerPrefixes(node), ipam.err == nil
	}
	for _, n := range rec.Nodes.Nodes {
		if n.Name == node {
			return []string{n.PodCIDR}, true
		}
	}
	return nil, true
}
