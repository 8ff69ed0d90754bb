package globalcontroller

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
)

// inventory is what the local cluster holds of global services.
type inventory struct {
	Services   int
	LocalFirst int
	LocalZones int
	// Endpoints and ReadyEndpoints count the endpoints of the global slices by source cluster.
	Endpoints, ReadyEndpoints map[string]int
	// Conflicts count, by cluster, the global services it defines differently.
	Conflicts map[string]int
}

// takeInventory computes the inventory from the caches.
func (c *Controller) takeInventory() inventory {
	inv := inventory{Endpoints: map[string]int{}, ReadyEndpoints: map[string]int{}, Conflicts: c.announced.byCluster()}
	var y multiremote.Yielder
	services, _ := c.write.ServiceCache.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		y.Step()
		if _, ok := global.KeyOf(svc.Labels); ok {
			inv.Services++
			if global.DefinitionKept(svc).LocalFirst() {
				inv.LocalFirst++
			}
		}
	}
	for _, key := range c.write.SliceCache.ListIndexFuncValues(c.base.SourceIndex()) {
		objs, _ := c.write.SliceCache.ByIndex(c.base.SourceIndex(), key)
		for _, o := range objs {
			y.Step()
			s := o.(*discoveryv1.EndpointSlice)
			cluster := s.Labels[global.LabelCluster]
			for _, e := range s.Endpoints {
				inv.Endpoints[cluster]++
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					inv.ReadyEndpoints[cluster]++
				}
			}
		}
	}
	inv.LocalZones = len(c.zones.List())
	return inv
}

// updateInventory refreshes the inventory gauges and the report of what is over the limit.
// Series exist for the configured clusters (set to zero when they hold nothing) and for any
// other cluster our objects still name.
func (c *Controller) updateInventory(context.Context) {
	c.base.Expect.Expire()
	inv := c.takeInventory()
	m := c.metrics
	m.services.Set(float64(inv.Services))
	m.localFirst.Set(float64(inv.LocalFirst))
	m.localZones.Set(float64(inv.LocalZones))
	clusters := map[string]bool{}
	for name := range c.clusters {
		clusters[name] = true
	}
	for _, counts := range []map[string]int{inv.Endpoints, inv.Conflicts} {
		for name := range counts {
			clusters[name] = true
		}
	}
	for name := range clusters {
		m.endpoints.WithLabelValues(name).Set(float64(inv.Endpoints[name]))
		m.readyEndpoint.WithLabelValues(name).Set(float64(inv.ReadyEndpoints[name]))
		m.conflicts.WithLabelValues(name).Set(float64(inv.Conflicts[name]))
	}
	c.opts.Limit.Report()
}
