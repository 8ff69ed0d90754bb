// Package calicoipam reads where a remote cluster's pod addresses are from Calico's IPAM blocks
// (ipamblocks.crd.projectcalico.org), without any I/O: each block affine to a node (spec.affinity
// "host:<node>") belongs to that node, and each address that a pod on another node borrowed from
// a block belongs, as a single-address prefix, to the node that holds it. WireGuard and the
// kernel both pick the longest matching prefix, so a borrowed address reaches its own node while
// the rest of its block reaches the block's.
package calicoipam

import (
	"cmp"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-semaphore/semaphore/components/wireguard/overlap"
)

// Resource is Calico's IPAM block resource, read through the dynamic client.
var Resource = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamblocks"}

// Block is what this package keeps of an IPAMBlock: an informer stores it in place of the whole
// object (Transform), so the cache holds a few fields rather than every attribute.
type Block struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	CIDR     string
	Affinity string
	Deleted  bool
	// Holders are the allocated addresses and the node each is allocated to (the "node"
	// attribute Calico records with a pod's allocation); allocations without one are left out.
	Holders []Holder
}

// Holder is one allocated ordinal of a block and the node its address is allocated to.
type Holder struct {
	Ordinal int
	Node    string
}

// DeepCopyObject makes Block a runtime.Object, as informer caches require.
func (b *Block) DeepCopyObject() runtime.Object {
	out := *b
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Holders = slices.Clone(b.Holders)
	return &out
}

// Transform is an informer transform (cache.TransformFunc): it turns each IPAMBlock read through
// the dynamic client into a *Block and lets everything else (a Block already, a tombstone)
// through.
func Transform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	return FromUnstructured(u), nil
}

// FromUnstructured keeps what this package needs of an IPAMBlock. Fields of the wrong type read
// as empty, so that Prefixes skips the block rather than the informer failing on it.
func FromUnstructured(u *unstructured.Unstructured) *Block {
	b := &Block{ObjectMeta: metav1.ObjectMeta{
		Name:              u.GetName(),
		UID:               u.GetUID(),
		ResourceVersion:   u.GetResourceVersion(),
		CreationTimestamp: u.GetCreationTimestamp(),
		DeletionTimestamp: u.GetDeletionTimestamp(),
	}}
	b.CIDR, _, _ = unstructured.NestedString(u.Object, "spec", "cidr")
	b.Affinity, _, _ = unstructured.NestedString(u.Object, "spec", "affinity")
	b.Deleted, _, _ = unstructured.NestedBool(u.Object, "spec", "deleted")
	allocations, _, _ := unstructured.NestedSlice(u.Object, "spec", "allocations")
	attributes, _, _ := unstructured.NestedSlice(u.Object, "spec", "attributes")
	for ordinal, a := range allocations {
		i, ok := a.(int64)
		if !ok || i < 0 || int(i) >= len(attributes) {
			continue // free (null), or not an index of an attribute
		}
		attr, _ := attributes[i].(map[string]any)
		node, _, _ := unstructured.NestedString(attr, "secondary", "node")
		if node != "" {
			b.Holders = append(b.Holders, Holder{Ordinal: ordinal, Node: node})
		}
	}
	return b
}

// Reasons a block is skipped, the reason label of the skipped-blocks metric.
const (
	ReasonNoAffinity  = "no_affinity"
	ReasonBadCIDR     = "bad_cidr"
	ReasonOverlapping = "overlapping_block"
	ReasonLocal       = "overlaps_local"
)

// Reasons lists every reason, for metrics that report zeros too.
var Reasons = []string{ReasonNoAffinity, ReasonBadCIDR, ReasonOverlapping, ReasonLocal}

// Skip is a block whose range is not routed, and why.
type Skip struct {
	Block  string
	Reason string
	Detail string
}

// Prefixes returns the prefixes of each node of the remote, each node's sorted, and the blocks
// whose range is not routed:
//   - blocks being deleted (spec.deleted, or a deletion timestamp) are ignored;
//   - a block whose CIDR does not parse, is not a network address, or overlaps one of local (this
//     cluster's own ranges, which a remote must never take over) is skipped entirely;
//   - blocks that overlap each other conflict: the oldest (creation time, then name) is kept and
//     the others are skipped, so no address is ever claimed by two blocks, whatever the order
//     of events;
//   - a block without host affinity routes no range of its own (ReasonNoAffinity), but the
//     addresses allocated from it still reach the nodes that hold them.
func Prefixes(blocks []*Block, local []netip.Prefix) (map[string][]netip.Prefix, []Skip) {
	live := make([]*Block, 0, len(blocks))
	for _, b := range blocks {
		if !b.Deleted && b.DeletionTimestamp == nil {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b *Block) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	out := map[string][]netip.Prefix{}
	var skipped []Skip
	kept := overlap.New()
	for _, b := range live {
		cidr, err := parseCIDR(b.CIDR)
		if err != nil {
			skipped = append(skipped, Skip{b.Name, ReasonBadCIDR, err.Error()})
			continue
		}
		if l, ok := firstOverlap(cidr, local); ok {
			skipped = append(skipped, Skip{b.Name, ReasonLocal, fmt.Sprintf("%s overlaps %s of this cluster", cidr, l)})
			continue
		}
		if other, found := kept.Find(cidr, nil); found {
			skipped = append(skipped, Skip{b.Name, ReasonOverlapping, fmt.Sprintf("%s overlaps block %s, which is older and kept", cidr, other.Holder)})
			continue
		}
		kept.Add(cidr, b.Name)
		owner, affine := strings.CutPrefix(b.Affinity, "host:")
		if !affine || owner == "" {
			skipped = append(skipped, Skip{b.Name, ReasonNoAffinity, fmt.Sprintf("affinity %q is not host:<node>; only its allocated addresses are routed", b.Affinity)})
			owner = ""
		}
		wholeBorrowed := false
		for _, h := range b.Holders {
			if h.Node == owner {
				continue
			}
			addr, ok := nth(cidr, h.Ordinal)
			if !ok {
				continue // an ordinal past the block's end: nothing to route
			}
			out[h.Node] = append(out[h.Node], netip.PrefixFrom(addr, addr.BitLen()))
			wholeBorrowed = wholeBorrowed || cidr.IsSingleIP()
		}
		// A single-address block lent to another node is that node's only.
		if owner != "" && !wholeBorrowed {
			out[owner] = append(out[owner], cidr)
		}
	}
	for node, ps := range out {
		slices.SortFunc(ps, comparePrefixes)
		out[node] = slices.Compact(ps)
	}
	return out, skipped
}

func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("cidr %q: %w", s, err)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("cidr %q is not a network address (%s)", s, p.Masked())
	}
	return p, nil
}

func firstOverlap(p netip.Prefix, ranges []netip.Prefix) (netip.Prefix, bool) {
	for _, r := range ranges {
		if p.Overlaps(r) {
			return r, true
		}
	}
	return netip.Prefix{}, false
}

// nth is the ordinal-th address of p, if p holds that many.
func nth(p netip.Prefix, ordinal int) (netip.Addr, bool) {
	if ordinal < 0 {
		return netip.Addr{}, false
	}
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits < 63 && uint64(ordinal) >= uint64(1)<<hostBits {
		return netip.Addr{}, false
	}
	n := new(big.Int).SetBytes(p.Addr().AsSlice())
	n.Add(n, big.NewInt(int64(ordinal)))
	b := n.FillBytes(make([]byte, p.Addr().BitLen()/8))
	a, _ := netip.AddrFromSlice(b)
	return a, true
}

func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Bits(), b.Bits())
}
