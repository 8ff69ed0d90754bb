package mcscontroller

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
)

// updateInventory refreshes the gauges from the caches: our ServiceImports by type, the local
// ServiceExports by condition, the imported endpoints by source cluster.
func (c *Controller) updateInventory(context.Context) {
	c.base.Expect.Expire()
	var y multiremote.Yielder
	imports := map[string]int{}
	all, _ := c.ours.imports.List(labels.Everything())
	for _, si := range all {
		y.Step()
		if _, ok := mcs.KeyOf(si.Labels); ok {
			imports[string(si.Spec.Type)]++
		}
	}
	for _, t := range []mcsv1beta1.ServiceImportType{mcsv1beta1.ClusterSetIP, mcsv1beta1.Headless} {
		c.metrics.imports.WithLabelValues(string(t)).Set(float64(imports[string(t)]))
	}
	c.countExports(&y)
	c.countEndpoints(&y)
}

func (c *Controller) countExports(y *multiremote.Yielder) {
	counts := map[[2]string]int{}
	exports, _ := c.clusters[c.opts.LocalCluster].exports.List(labels.Everything())
	for _, se := range exports {
		y.Step()
		for _, cond := range se.Status.Conditions {
			counts[[2]string{cond.Type, string(cond.Status)}]++
		}
	}
	for _, t := range []string{"Valid", "Ready", "Conflict"} {
		for _, s := range []string{"True", "False"} {
			c.metrics.exports.WithLabelValues(t, s).Set(float64(counts[[2]string{t, s}]))
		}
	}
}

func (c *Controller) countEndpoints(y *multiremote.Yielder) {
	endpoints := map[string]int{}
	for name := range c.clusters {
		endpoints[name] = 0
	}
	for _, o := range c.ours.slices.List() {
		y.Step()
		s := o.(*discoveryv1.EndpointSlice)
		endpoints[s.Labels[mcs.LabelCluster]] += len(s.Endpoints)
	}
	// Series of a cluster no longer configured, once none of ours names it, go.
	c.metrics.endpoints.Reset()
	for name, n := range endpoints {
		c.metrics.endpoints.WithLabelValues(name).Set(float64(n))
	}
}
