package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// inventory counts, per remote, the labelled pods seen there and the sets and addresses here.
type inventory struct {
	RemotePods int
	Sets       int
	Addresses  int
}

// takeInventory computes the inventory of every configured remote from the caches.
func (c *NetworkSets) takeInventory() map[string]inventory {
	inv := map[string]inventory{}
	var y multiremote.Yielder
	for _, o := range c.localSets.List() {
		y.Step()
		u := o.(*unstructured.Unstructured)
		s, ok := netset.SourceOf(u.GetLabels())
		if !ok || !ownership.IsManagedBy(u.GetLabels(), ownership.Policy) {
			continue
		}
		nets, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "nets")
		i := inv[s.Cluster]
		i.Sets++
		i.Addresses += len(nets)
		inv[s.Cluster] = i
	}
	for name, rc := range c.remotes {
		i := inv[name]
		i.RemotePods = len(rc.pods.ListKeys())
		inv[name] = i
	}
	return inv
}

// updateInventory refreshes the inventory gauges of the configured remotes.
func (c *NetworkSets) updateInventory(context.Context) {
	c.base.Expect.Expire()
	multiremote.SetGauges(c.base.Remotes(), c.takeInventory(), c.metrics.inventory)
}
