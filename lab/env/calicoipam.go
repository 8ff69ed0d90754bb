package env

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
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
)

// The lab plays calico-ipam's bookkeeping in the Calico-way cluster (calico.go): it keeps the
// IPAM blocks' allocations equal to the addresses of the cluster's pods.

// startCalicoIPAM writes CalicoCluster's blocks and keeps their allocations equal to the
// addresses of the cluster's pods (not those on the host network) until the lab goes down,
// each allocated to the pod's node, as calico-ipam records them. Changes go to
// logs/calico-ipam.log.
func (l *Lab) startCalicoIPAM(ctx context.Context) error {
	c := l.clusters[CalicoCluster]
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	log, err := os.Create(l.Path("logs", "calico-ipam.log"))
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
	l.Logf("%s runs the Calico way: Nodes without pod CIDRs, IPAM blocks %s kept by the lab as calico-ipam would (logs/calico-ipam.log)", CalicoCluster, blockNames())
	return nil
}

// blockNames lists CalicoBlocks for a log line: "<cidr> (<node>), ...".
func blockNames() string {
	var names []string
	for _, b := range CalicoBlocks() {
		names = append(names, fmt.Sprintf("%s (%s)", b.CIDR, b.Node))
	}
	return strings.Join(names, ", ")
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
			if b, ok := BlockOf(a); err == nil && ok {
				if want[b.CIDR] == nil {
					want[b.CIDR] = map[netip.Addr]string{}
				}
				want[b.CIDR][a] = p.Spec.NodeName
			}
		}
	}
	for _, b := range CalicoBlocks() {
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
