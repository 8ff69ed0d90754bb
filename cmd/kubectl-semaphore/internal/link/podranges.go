package link

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// PodRanges proposes the remote's global.remotes[].podRanges from its Nodes' pod CIDRs and,
// where Calico runs and its IP pools can be read, the CIDRs of its enabled pools (with Calico's
// IPAM, pods take their addresses from the pools, whatever the Nodes' pod CIDRs say): for each
// address family, the smallest range that holds them all. Where that would be wider
// than a routed range may be (/16, /48: nodes scattered over several cluster-sized ranges), it
// is the /16s or /48s that hold them. A cluster whose Nodes have no pod CIDRs (Calico IPAM
// without them, a VPC CNI) gives none, and the user says the ranges.
//
// The proposal is a lower bound: a node added later with a pod CIDR outside it is not routed
// until the range is widened, which is the safe side of the mistake.
func PodRanges(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes for their pod CIDRs: %w", err)
	}
	cidrs, err := ipPoolCIDRs(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		cidrs = append(cidrs, n.Spec.PodCIDRs...)
	}
	var v4, v6 []netip.Prefix
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue // the remote's problem; semaphore-wireguard skips such a node
		}
		if p = p.Masked(); p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	var out []string
	for _, family := range []struct {
		nodes []netip.Prefix
		least int
	}{{v4, addrguard.MinRoutedBitsIPv4}, {v6, addrguard.MinRoutedBitsIPv6}} {
		for _, p := range covering(family.nodes, family.least) {
			out = append(out, p.String())
		}
	}
	return out, nil
}

// ipPoolsPath is where Calico's IP pools are served (its CRDs; an aggregated projectcalico.org/v3
// API server serves the same pools from them).
const ipPoolsPath = "/apis/crd.projectcalico.org/v1/ippools"

// ipPoolCIDRs are the CIDRs of the remote's enabled Calico IP pools; none where Calico's CRDs
// are not installed or the context may not read them.
func ipPoolCIDRs(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	raw, err := c.Discovery().RESTClient().Get().AbsPath(ipPoolsPath).DoRaw(ctx)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Calico IP pools: %w", err)
	}
	var pools struct {
		Items []struct {
			Spec struct {
				CIDR     string `json:"cidr"`
				Disabled bool   `json:"disabled"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &pools); err != nil {
		return nil, fmt.Errorf("reading Calico IP pools: %w", err)
	}
	var out []string
	for _, p := range pools.Items {
		if !p.Spec.Disabled {
			out = append(out, p.Spec.CIDR)
		}
	}
	return out, nil
}

// covering returns the smallest prefix holding every one of ps, or, when that is shorter than
// least bits, the distinct prefixes of least bits that hold them, sorted.
func covering(ps []netip.Prefix, least int) []netip.Prefix {
	if len(ps) == 0 {
		return nil
	}
	c := ps[0]
	for _, p := range ps[1:] {
		for c.Bits() > p.Bits() || !c.Contains(p.Addr()) {
			c = netip.PrefixFrom(c.Addr(), c.Bits()-1).Masked()
		}
	}
	if c.Bits() >= least {
		return []netip.Prefix{c}
	}
	var out []netip.Prefix
	for _, p := range ps {
		w := netip.PrefixFrom(p.Addr(), min(least, p.Bits())).Masked()
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
