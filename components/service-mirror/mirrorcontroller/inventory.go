package mirrorcontroller

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// inventory counts, per remote, what is selected there and what is mirrored here.
type inventory struct {
	RemoteServices int
	Mirrors        int
	Endpoints      int
	// Drift is the number of selected remote Services within the limit without a local
	// mirror plus local mirrors without such a remote Service.
	Drift int
}

// takeInventory computes the inventory of every configured remote from the caches. Only the
// inventory loop calls it: it reuses its set of mirrored sources from one pass to the next, so
// that a pass over thousands of mirrors allocates next to nothing.
func (c *Controller) takeInventory() map[string]inventory {
	inv := map[string]inventory{}
	if c.mirrored == nil {
		c.mirrored = map[mirror.Source]bool{}
	}
	mirrored := c.mirrored
	clear(mirrored)
	var y multiremote.Yielder
	services, _ := c.write.ServiceCache.Services(c.opts.Namespace).List(labels.Everything())
	for _, svc := range services {
		y.Step()
		s, ok := mirror.SourceOf(svc.Labels)
		if !ok || !ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) {
			continue
		}
		mirrored[s] = true
		i := inv[s.Cluster]
		i.Mirrors++
		inv[s.Cluster] = i
	}
	for _, o := range c.write.SliceCache.List() {
		y.Step()
		sl := o.(*discoveryv1.EndpointSlice)
		s, ok := mirror.SourceOf(sl.Labels)
		if !ok || !ownership.IsManagedBy(sl.Labels, ownership.ServiceMirror) {
			continue
		}
		i := inv[s.Cluster]
		i.Endpoints += len(sl.Endpoints)
		inv[s.Cluster] = i
	}
	for name, rc := range c.remotes {
		i := inv[name]
		remoteServices, _ := rc.Services.List(labels.Everything())
		i.RemoteServices = len(remoteServices)
		expected, present := 0, 0
		for _, svc := range remoteServices {
			y.Step()
			// Those over the limit are left out on purpose: over_limit counts them.
			if rc.Limited.Admission(limit.Key{Namespace: svc.Namespace, Name: svc.Name}) == limit.Over {
				continue
			}
			expected++
			if mirrored[mirror.Source{Cluster: name, Namespace: svc.Namespace, Name: svc.Name}] {
				present++
			}
		}
		i.Drift = (expected - present) + (i.Mirrors - present)
		inv[name] = i
	}
	return inv
}

// updateInventory refreshes the inventory gauges and the report of what is over the limit.
// Series exist for configured remotes only: mirrors of remotes no longer configured are
// garbage-collected at start.
func (c *Controller) updateInventory(context.Context) {
	c.base.Expect.Expire()
	multiremote.SetGauges(c.base.Remotes(), c.takeInventory(), c.metrics.inventory)
	c.opts.Limit.Report()
}
