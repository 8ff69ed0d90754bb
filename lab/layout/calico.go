package layout

import (
	"net/netip"
	"time"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
)

// Calico in the lab: in CalicoCluster pods get their addresses from calico-ipam, in blocks of
// the cluster's IP pools that the nodes claim as they need them; fluentd's addresses are
// borrowed there, from FluentdPool, a pool of one block that BlockHolderName's pod claimed
// first on the first node. The other clusters run Calico for policy only, on their Nodes'
// pod CIDRs. lab/env's calico.go says how the lab runs it.

// CalicoVersion is the Calico release the lab runs (ci/calico.sh).
const CalicoVersion = "v3.28.5"

// CalicoCluster is the cluster where the lab shows calico-ipam's borrowed addresses.
const CalicoCluster = "aws"

// CalicoAPI is the API group semaphore-policy writes its GlobalNetworkSets to in the lab: the
// umbrella chart's default, served by the Calico API server.
const CalicoAPI = calico.APIv3

const (
	// PodsPool is every cluster's pool of its pods' addresses; in CalicoCluster the one
	// calico-ipam takes them from unless a pod asks for another.
	PodsPool = "pods"
	// FluentdPool is CalicoCluster's pool of one block that fluentd's addresses come from.
	FluentdPool = "fluentd"
	// BlockHolderName is the Deployment whose pod, on CalicoCluster's first node, claims
	// FluentdPool's block.
	BlockHolderName = "block-holder"
	// podBlockSize is the size of the blocks of CalicoCluster's pod pool: small (8
	// addresses), so that nodes claim several as pods come.
	podBlockSize = 29
	// BlockReleaseGrace is how long a block stays empty before kube-controllers releases it,
	// when its node has others (kube-controllers' leakGracePeriod).
	BlockReleaseGrace = 15 * time.Second
)

// IPPool is one of a cluster's own IP pools.
type IPPool struct {
	Name      string
	CIDR      netip.Prefix
	BlockSize int
}

// IPPoolsOf are cluster's own IP pools: its pod range, and in CalicoCluster the range's lower
// half, and its last /29 as FluentdPool, one block.
func IPPoolsOf(cluster string) []IPPool {
	r := netip.MustParsePrefix(SpecOf(cluster).PodCIDR)
	if cluster != CalicoCluster {
		// No block is made of it (host-local hands the addresses out): the pool says what the
		// cluster's pods are, for Calico's NAT.
		return []IPPool{{PodsPool, r, 26}}
	}
	lower := netip.PrefixFrom(r.Addr(), r.Bits()+1)
	fluentd := netip.PrefixFrom(AddrAdd(r.Addr(), 1<<(32-r.Bits())-8), 29)
	return []IPPool{{PodsPool, lower, podBlockSize}, {FluentdPool, fluentd, 29}}
}
