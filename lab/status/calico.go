package status

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/lab/env"
)

// What the status expects of the Calico-way cluster (env.CalicoCluster): where its nodes' pods'
// addresses come from, and so what a device for it gives each peer.

// calicoPeerPrefixes are the prefixes a device for CalicoCluster must give the peer for node:
// the blocks affine to it, and the addresses its pods borrowed from the others' blocks, sorted.
func calicoPeerPrefixes(rec *env.Record, node string) []string {
	var out []netip.Prefix
	for _, b := range env.CalicoBlocks() {
		if b.Node == node {
			out = append(out, b.CIDR)
		}
	}
	for _, p := range rec.Pods {
		a, err := netip.ParseAddr(p.IP)
		if b, ok := env.BlockOf(a); err == nil && ok && p.Cluster == env.CalicoCluster && p.Node == node && b.Node != node {
			out = append(out, netip.PrefixFrom(a, 32))
		}
	}
	return sortedPrefixes(out)
}

func sortedPrefixes(ps []netip.Prefix) []string {
	slices.SortFunc(ps, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// podsColumn is what the status says of where node n's pods' addresses come from: its pod
// CIDR, or in CalicoCluster the IPAM blocks affine to it and the range it borrows.
func podsColumn(n env.Node) string {
	if n.Cluster != env.CalicoCluster {
		return n.PodCIDR
	}
	var own []string
	for _, b := range env.CalicoBlocks() {
		if b.Node == n.Name {
			own = append(own, b.CIDR.String())
		}
	}
	s := "blocks " + strings.Join(own, ",")
	if start, end, ok := env.CalicoBorrowed(n.Name); ok {
		b, _ := env.BlockOf(netip.MustParseAddr(start))
		s += fmt.Sprintf("; CNI %s-%s, borrowed from %s (%s)", start, end, b.CIDR, b.Node)
	}
	return s
}
