package calicoipam

import (
	"fmt"
	"net/netip"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object is an IPAMBlock as calico-ipam writes it: the block cidr affine to node (none when
// node is empty), with the addresses in holders (address -> node holding it) allocated to pods
// on those nodes. It stands in for Calico in the tests that run none (the lab runs Calico).
// Calico names a block after its CIDR, as BlockName does.
func Object(cidr netip.Prefix, node string, holders map[netip.Addr]string) (*unstructured.Unstructured, error) {
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if hostBits > 16 {
		return nil, fmt.Errorf("block %s: more than 65536 addresses", cidr)
	}
	size := 1 << hostBits
	allocations := make([]any, size)
	var attributes []any
	addrs := make([]netip.Addr, 0, len(holders))
	for a := range holders {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i].Less(addrs[j]) })
	for _, a := range addrs {
		if !cidr.Contains(a) {
			return nil, fmt.Errorf("block %s does not contain %s", cidr, a)
		}
	}
	var unallocated []any
	for ordinal, a := 0, cidr.Addr(); ordinal < size; ordinal, a = ordinal+1, a.Next() {
		holder, ok := holders[a]
		if !ok {
			unallocated = append(unallocated, int64(ordinal))
			continue
		}
		allocations[ordinal] = int64(len(attributes))
		attributes = append(attributes, map[string]any{
			"handle_id": "k8s-pod-network." + a.String(),
			"secondary": map[string]any{"node": holder, "namespace": "default", "pod": "pod-" + a.String()},
		})
	}
	spec := map[string]any{
		"cidr":           cidr.String(),
		"allocations":    allocations,
		"attributes":     attributes,
		"unallocated":    unallocated,
		"sequenceNumber": int64(1),
		"strictAffinity": false,
	}
	if attributes == nil {
		spec["attributes"] = []any{}
	}
	if unallocated == nil {
		spec["unallocated"] = []any{}
	}
	if node != "" {
		spec["affinity"] = "host:" + node
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Resource.GroupVersion().String(),
		"kind":       "IPAMBlock",
		"spec":       spec,
	}}
	u.SetName(BlockName(cidr))
	return u, nil
}

// BlockName is the name Calico gives the block of cidr: its address and length joined by
// dashes (10-244-1-0-26; colons become dashes too for IPv6).
func BlockName(cidr netip.Prefix) string {
	b := []byte(fmt.Sprintf("%s-%d", cidr.Addr(), cidr.Bits()))
	for i, c := range b {
		if c == '.' || c == ':' {
			b[i] = '-'
		}
	}
	return string(b)
}
