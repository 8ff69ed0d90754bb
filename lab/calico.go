package main

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
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
// from it only (calicoBorrowed): its pods' addresses are borrowed, as calico-ipam borrows
// when a node's own blocks are full, and reach it as single addresses inside another node's
// block. A loop keeps every block's allocations equal to the addresses of the cluster's pods.

// calicoCluster is the Calico-way cluster.
const calicoCluster = "aws"

// ipamBlockCRD is Calico's IPAMBlock CRD, which calicoCluster's API server serves.
var ipamBlockCRD = filepath.Join(testbed.RepoRoot(), "components", "wireguard", "testdata", "crds", "crd.projectcalico.org_ipamblocks.yaml")

// ipamBlock is a block of calicoCluster and the node it is affine to.
type ipamBlock struct {
	CIDR netip.Prefix
	Node string
}

// calicoBlocks are calicoCluster's blocks: each node's range in two halves, affine to the
// node, except the last node's upper half, affine to the first node.
func calicoBlocks() []ipamBlock {
	var out []ipamBlock
	for i := range nodesPerCluster {
		r := nodePodCIDR(calicoCluster, i)
		lower := netip.PrefixFrom(r.Addr(), r.Bits()+1)
		upper := netip.PrefixFrom(addrAdd(r.Addr(), 1<<(32-lower.Bits())), lower.Bits())
		owner := nodeName(calicoCluster, i)
		out = append(out, ipamBlock{lower, owner})
		if i == nodesPerCluster-1 {
			owner = nodeName(calicoCluster, 0)
		}
		out = append(out, ipamBlock{upper, owner})
	}
	return out
}

// calicoBorrowed is the range the CNI of node hands out when its pods' addresses are
// borrowed: .8 to .58 of the last node's upper block (198.18.1.200-250 on aws-node-2).
func calicoBorrowed(node string) (start, end string, ok bool) {
	if node != nodeName(calicoCluster, nodesPerCluster-1) {
		return "", "", false
	}
	b := calicoBlocks()[2*nodesPerCluster-1].CIDR
	return addrAdd(b.Addr(), 8).String(), addrAdd(b.Addr(), 58).String(), true
}

// blockOf is the block of calicoCluster that holds addr.
func blockOf(addr netip.Addr) (ipamBlock, bool) {
	for _, b := range calicoBlocks() {
		if b.CIDR.Contains(addr) {
			return b, true
		}
	}
	return ipamBlock{}, false
}

// calicoPeerPrefixes are the prefixes a device for calicoCluster must give the peer for node:
// the blocks affine to it, and the addresses its pods borrowed from the others' blocks, sorted.
func calicoPeerPrefixes(st *State, node string) []string {
	var out []netip.Prefix
	for _, b := range calicoBlocks() {
		if b.Node == node {
			out = append(out, b.CIDR)
		}
	}
	for _, p := range st.Pods {
		a, err := netip.ParseAddr(p.IP)
		if b, ok := blockOf(a); err == nil && ok && p.Cluster == calicoCluster && p.Node == node && b.Node != node {
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

// startCalicoIPAM writes calicoCluster's blocks and keeps their allocations equal to the
// addresses of the cluster's pods (not those on the host network) until the lab goes down,
// each allocated to the pod's node, as calico-ipam records them. Changes go to
// logs/calico-ipam.log.
func (l *lab) startCalicoIPAM(ctx context.Context) error {
	c := l.clusters[calicoCluster]
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	log, err := os.Create(l.path("logs", "calico-ipam.log"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(c.Client, 0)
	pods := factory.Core().V1().Pods()
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}); err != nil {
		cancel()
		return err
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	l.onTeardown(func() { cancel(); <-done; factory.Shutdown(); log.Close() })
	written := map[netip.Prefix]map[netip.Addr]string{}
	// The blocks exist, empty, before any pod or controller does.
	if err := writeBlocks(ctx, dc.Resource(calicoipam.Resource), nil, written, log); err != nil {
		cancel()
		close(done)
		return err
	}
	go func() {
		defer close(done)
		if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
			return
		}
		for {
			list, _ := pods.Lister().List(labels.Everything())
			if err := writeBlocks(ctx, dc.Resource(calicoipam.Resource), list, written, log); err != nil && ctx.Err() == nil {
				fmt.Fprintf(log, "%s error: %v (again in a second)\n", time.Now().Format(time.TimeOnly), err)
				time.AfterFunc(time.Second, poke)
			}
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
		}
	}()
	var names []string
	for _, b := range calicoBlocks() {
		names = append(names, fmt.Sprintf("%s (%s)", b.CIDR, b.Node))
	}
	l.logf("%s runs the Calico way: Nodes without pod CIDRs, IPAM blocks %s kept by the lab as calico-ipam would (logs/calico-ipam.log)", calicoCluster, strings.Join(names, ", "))
	return nil
}

// writeBlocks makes every block's allocations those of pods, writing the blocks whose
// allocations differ from written (what was last written) and recording what it wrote there.
func writeBlocks(ctx context.Context, client dynamic.ResourceInterface, pods []*corev1.Pod, written map[netip.Prefix]map[netip.Addr]string, log *os.File) error {
	want := map[netip.Prefix]map[netip.Addr]string{}
	for _, p := range pods {
		if p.Spec.HostNetwork || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ip := range p.Status.PodIPs {
			a, err := netip.ParseAddr(ip.IP)
			if b, ok := blockOf(a); err == nil && ok {
				if want[b.CIDR] == nil {
					want[b.CIDR] = map[netip.Addr]string{}
				}
				want[b.CIDR][a] = p.Spec.NodeName
			}
		}
	}
	for _, b := range calicoBlocks() {
		if old, ok := written[b.CIDR]; ok && maps.Equal(old, want[b.CIDR]) {
			continue
		}
		obj, err := calicoipam.Object(b.CIDR, b.Node, want[b.CIDR])
		if err != nil {
			return err
		}
		cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = client.Create(ctx, obj, metav1.CreateOptions{})
		case err == nil:
			// calico-ipam counts every write of a block.
			seq, _, _ := unstructured.NestedInt64(cur.Object, "spec", "sequenceNumber")
			_ = unstructured.SetNestedField(obj.Object, seq+1, "spec", "sequenceNumber")
			obj.SetResourceVersion(cur.GetResourceVersion())
			_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("IPAM block %s: %w", obj.GetName(), err)
		}
		var held []string
		for _, a := range slices.SortedFunc(maps.Keys(want[b.CIDR]), netip.Addr.Compare) {
			held = append(held, a.String()+"@"+want[b.CIDR][a])
		}
		fmt.Fprintf(log, "%s block %s (affinity host:%s): allocated %v\n", time.Now().Format(time.TimeOnly), b.CIDR, b.Node, held)
		written[b.CIDR] = maps.Clone(want[b.CIDR])
	}
	return nil
}

// podsColumn is what the status says of where node n's pods' addresses come from: its pod
// CIDR, or in calicoCluster the IPAM blocks affine to it and the range it borrows.
func podsColumn(n NodeState) string {
	if n.Cluster != calicoCluster {
		return n.PodCIDR
	}
	var own []string
	for _, b := range calicoBlocks() {
		if b.Node == n.Name {
			own = append(own, b.CIDR.String())
		}
	}
	s := "blocks " + strings.Join(own, ",")
	if start, end, ok := calicoBorrowed(n.Name); ok {
		b, _ := blockOf(netip.MustParseAddr(start))
		s += fmt.Sprintf("; CNI %s-%s, borrowed from %s (%s)", start, end, b.CIDR, b.Node)
	}
	return s
}
