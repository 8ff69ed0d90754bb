package env

import (
	"net/netip"
	"path/filepath"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// The Calico-way cluster. aws runs the way a cluster whose pod addresses Calico's IPAM assigns
// does: its Nodes carry no pod CIDR, and where each node's pods are is in Calico's IPAM blocks
// (ipamblocks.crd.projectcalico.org), which gcp's and merit's semaphore-wireguard read
// (wireguard.podCIDRsFrom {aws: calico-ipam}, semaphore-remote's consumers with calicoIPAM).
// No Calico runs here: the nodes' CNI is still the bridge with host-local addresses, and the lab
// plays calico-ipam's bookkeeping, writing the blocks that describe what the CNI hands out
// (calicoipam.Object, as calico-ipam writes them). Each node's range is two blocks; the last
// node's upper block is affine to the first node, and the last node's CNI hands out addresses
// from it only (CalicoBorrowed): its pods' addresses are borrowed, as calico-ipam borrows
// when a node's own blocks are full, and reach it as single addresses inside another node's
// block. A loop keeps every block's allocations equal to the addresses of the cluster's pods.

// CalicoCluster is the Calico-way cluster.
const CalicoCluster = "aws"

// CalicoAPI is the API group semaphore-policy writes its GlobalNetworkSets to in the lab: the
// umbrella chart's default.
const CalicoAPI = calico.APIv3

// calicoCRD is the GlobalNetworkSet CRD of CalicoAPI that every cluster's API server gets. In a
// real cluster the Calico API server (an aggregated API) serves projectcalico.org/v3; the lab has
// no Calico, and this CRD, with the same group, version, kind, scope and schema, stands in for
// it: the controller sees the same REST paths and objects. The crd.projectcalico.org/v1 CRD of the
// same fixtures is left out, as the controller writes to one group only.
var calicoCRD = filepath.Join(testbed.RepoRoot(), "components", "policy", "testdata", "crds", "projectcalico.org_globalnetworksets.yaml")

// ipamBlockCRD is Calico's IPAMBlock CRD, which CalicoCluster's API server serves.
var ipamBlockCRD = filepath.Join(testbed.RepoRoot(), "components", "wireguard", "testdata", "crds", "crd.projectcalico.org_ipamblocks.yaml")

// IPAMBlock is a block of CalicoCluster and the node it is affine to.
type IPAMBlock struct {
	CIDR netip.Prefix
	Node string
}

// CalicoBlocks are CalicoCluster's blocks: each node's range in two halves, affine to the
// node, except the last node's upper half, affine to the first node.
func CalicoBlocks() []IPAMBlock {
	var out []IPAMBlock
	for i := range NodesPerCluster {
		r := NodePodCIDR(CalicoCluster, i)
		lower := netip.PrefixFrom(r.Addr(), r.Bits()+1)
		upper := netip.PrefixFrom(AddrAdd(r.Addr(), 1<<(32-lower.Bits())), lower.Bits())
		owner := NodeName(CalicoCluster, i)
		out = append(out, IPAMBlock{lower, owner})
		if i == NodesPerCluster-1 {
			owner = NodeName(CalicoCluster, 0)
		}
		out = append(out, IPAMBlock{upper, owner})
	}
	return out
}

// CalicoBorrowed is the range the CNI of node hands out when its pods' addresses are
// borrowed: .8 to .58 of the last node's upper block (198.18.1.200-250 on aws-node-2).
func CalicoBorrowed(node string) (start, end string, ok bool) {
	if node != NodeName(CalicoCluster, NodesPerCluster-1) {
		return "", "", false
	}
	b := CalicoBlocks()[2*NodesPerCluster-1].CIDR
	return AddrAdd(b.Addr(), 8).String(), AddrAdd(b.Addr(), 58).String(), true
}

// BlockOf is the block of CalicoCluster that holds addr.
func BlockOf(addr netip.Addr) (IPAMBlock, bool) {
	for _, b := range CalicoBlocks() {
		if b.CIDR.Contains(addr) {
			return b, true
		}
	}
	return IPAMBlock{}, false
}
