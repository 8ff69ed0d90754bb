package check

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// ipPoolResource is where Calico keeps its IP pools (its CRDs; the projectcalico.org/v3 API
// server serves the same pools from them).
var ipPoolResource = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ippools"}

// ipPool is what the checks read of a Calico IPPool.
type ipPool struct {
	name                          string
	cidr                          netip.Prefix
	disabled, natOutgoing, noBGP  bool
	ipipMode, vxlanMode, badField string
}

// ipPools are the local cluster's Calico IP pools; calico is false where Calico's IPPool
// resource does not exist.
func (k *checker) ipPools(ctx context.Context) (pools []ipPool, calico bool, err error) {
	list, err := k.dyn.Resource(ipPoolResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	for _, item := range list.Items {
		pools = append(pools, readPool(&item))
	}
	return pools, true, nil
}

func readPool(u *unstructured.Unstructured) ipPool {
	p := ipPool{name: u.GetName()}
	cidr, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		p.badField = fmt.Sprintf("cidr %q", cidr)
	}
	p.cidr = prefix.Masked()
	p.disabled, _, _ = unstructured.NestedBool(u.Object, "spec", "disabled")
	p.natOutgoing, _, _ = unstructured.NestedBool(u.Object, "spec", "natOutgoing")
	p.noBGP, _, _ = unstructured.NestedBool(u.Object, "spec", "disableBGPExport")
	p.ipipMode, _, _ = unstructured.NestedString(u.Object, "spec", "ipipMode")
	p.vxlanMode, _, _ = unstructured.NestedString(u.Object, "spec", "vxlanMode")
	return p
}

// covers reports whether the pool holds all of r.
func (p ipPool) covers(r netip.Prefix) bool {
	return p.badField == "" && p.cidr.Bits() <= r.Bits() && p.cidr.Contains(r.Addr())
}

// wrong says what of docs/calico.md a remote's pool breaks ("" when nothing): it must be
// disabled, without outgoing NAT or encapsulation; lax says what is only weaker (BGP export).
func (p ipPool) wrong() (wrong []string, lax string) {
	if !p.disabled {
		wrong = append(wrong, "not disabled (Calico would give its addresses to local pods)")
	}
	if p.natOutgoing {
		wrong = append(wrong, "natOutgoing (traffic to the remote pods would leave with the node's address)")
	}
	for _, m := range []struct{ field, mode string }{{"ipipMode", p.ipipMode}, {"vxlanMode", p.vxlanMode}} {
		if m.mode != "" && m.mode != "Never" {
			wrong = append(wrong, fmt.Sprintf("%s %s (traffic to the remote pods would be encapsulated instead of going through WireGuard)", m.field, m.mode))
		}
	}
	if !p.noBGP {
		lax = "disableBGPExport is not true (where Calico runs BGP, every node advertises the remote range)"
	}
	return wrong, lax
}

// checkIPPools checks, where Calico runs, that each pod range of each remote lies in an IPPool
// configured as docs/calico.md says.
func checkIPPools(res func(remote string) Result, remotes []string, ranges addrguard.Ranges, pools []ipPool, calico bool, err error) []Result {
	switch {
	case err != nil:
		return []Result{fail(res(""), "check-ippools", "listing Calico's IP pools (%s): %v", ipPoolResource.GroupResource(), err)}
	case !calico:
		return []Result{pass(res(""), "Calico not found (no %s resource): skipped", ipPoolResource.GroupResource())}
	}
	var out []Result
	for _, remote := range remotes {
		out = append(out, remotePools(res(remote), remote, ranges[remote], pools))
	}
	return out
}

// remotePools checks the pools of one remote's pod ranges.
func remotePools(res Result, remote string, ranges []netip.Prefix, pools []ipPool) Result {
	if len(ranges) == 0 {
		return warnRunbook(res, "check-ippools", "remote %s has no pod ranges (podRanges of its global.remotes entry): which IP pools it needs is not known", remote)
	}
	var missing, wrong, lax, fine []string
	for _, r := range ranges {
		i := indexCovering(pools, r)
		if i < 0 {
			missing = append(missing, r.String())
			continue
		}
		p := pools[i]
		bad, weak := p.wrong()
		switch {
		case len(bad) > 0:
			wrong = append(wrong, fmt.Sprintf("IPPool %s (%s, holding %s) is %s", p.name, p.cidr, r, strings.Join(bad, ", ")))
		case weak != "":
			lax = append(lax, fmt.Sprintf("IPPool %s (%s): %s", p.name, p.cidr, weak))
		default:
			fine = append(fine, fmt.Sprintf("%s in IPPool %s", r, p.name))
		}
	}
	switch {
	case len(missing) > 0:
		return fail(res, "check-ippools", "no IPPool holds remote %s's pod ranges %s: without one Calico masquerades traffic to them; create one per range as docs/calico.md shows (disabled, natOutgoing false, ipipMode and vxlanMode Never, disableBGPExport true)",
			remote, strings.Join(missing, ", "))
	case len(wrong) > 0:
		return fail(res, "check-ippools", "%s; set it as docs/calico.md shows", most(wrong, 3))
	case len(lax) > 0:
		return warnRunbook(res, "check-ippools", "%s", most(lax, 3))
	}
	return pass(res, "remote %s's pod ranges lie in disabled IP pools without NAT or encapsulation: %s", remote, strings.Join(fine, ", "))
}

// indexCovering is the index of the first pool that holds r, -1 when none does.
func indexCovering(pools []ipPool, r netip.Prefix) int {
	for i, p := range pools {
		if p.covers(r) {
			return i
		}
	}
	return -1
}
