package globalcontroller

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// sync makes the local objects of global service k match what every cluster holds, reading
// only from caches and writing only what differs.
func (c *Controller) sync(ctx context.Context, k global.Key) (reconcile.Result, error) {
	ours, err := c.write.Ours(k)
	if err != nil {
		return reconcile.Error, err
	}
	actual, err := c.write.ServiceCache.Services(c.opts.Namespace).Get(global.ServiceName(k))
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Error, err
	}
	defs := c.definitions(k)
	if len(defs) == 0 {
		if c.unknownHolds(ours) {
			// A cluster we cannot read yet had it: keep what it contributed until we can.
			return reconcile.Skipped, nil
		}
		c.announced.forget(k)
		return multiremote.Result(c.deleteAll(ctx, k, actual, ours))
	}
	used := c.decide(k, defs, actual)
	if actual == nil && c.mayStillWin(used.Cluster) {
		// Created now, it would be rewritten once that cluster synced: wait for the next
		// remote to sync, or for the end of the grace period.
		c.postponed.add(k)
		c.base.Queue.AddAfter(k, startGrace-time.Since(c.started))
		return reconcile.Skipped, nil
	}
	clashed, err := c.write.Service(ctx, k, global.Service(k, c.opts.Namespace, used))
	if err != nil || clashed {
		return c.write.Result(k, clashed, err)
	}
	desired, err := c.desiredSlices(k, used, ours)
	if err != nil {
		return reconcile.Error, err
	}
	return c.write.Finish(ctx, k, global.ServiceName(k), desired, ours)
}

// definitions are the definitions of k in every cluster we can read that has it.
func (c *Controller) definitions(k global.Key) []global.Definition {
	var defs []global.Definition
	for _, cl := range c.clusters {
		if svc := cl.service(k); svc != nil {
			defs = append(defs, global.DefinitionOf(cl.name, svc))
		}
	}
	return defs
}

// service is cl's selected Service of k, nil when it has none, cannot be read yet, or k is not
// among the global services within cl's limit.
func (cl *cluster) service(k global.Key) *corev1.Service {
	if !cl.ready() {
		return nil
	}
	svc, err := cl.Services.Services(k.Namespace).Get(k.Name)
	if err != nil || isOurs(svc) {
		return nil
	}
	// Unknown (the limit's handler has not seen it yet) is no contribution yet: the handler
	// enqueues k once it has.
	if cl.Limited.Admission(limit.Key(k)) != limit.Admitted {
		return nil
	}
	return svc
}

// decide applies the merge rule to defs and reports a new conflict. The definition an
// existing global Service follows is kept while its cluster, which the rule would still
// choose, cannot be read: a restart or an outage changes nothing.
func (c *Controller) decide(k global.Key, defs []global.Definition, actual *corev1.Service) global.Definition {
	m := global.Decide(defs)
	if actual != nil && ownership.IsManagedBy(actual.Labels, ownership.ServiceMirror) {
		kept := global.DefinitionKept(actual)
		if cl := c.clusters[kept.Cluster]; cl != nil && !cl.ready() && kept.Cluster < m.Used.Cluster {
			m.Used, m.Conflicts = kept, nil
			for _, d := range defs {
				if !d.Agrees(kept) {
					m.Conflicts = append(m.Conflicts, d.Cluster)
				}
			}
			slices.Sort(m.Conflicts)
		}
	}
	if c.announced.conflicts(k, m.Conflicts) && len(m.Conflicts) > 0 {
		c.reportConflict(k, m, actual)
	}
	return m.Used
}

// startGrace is how long after the start a new global Service waits for the remotes whose
// definition could win to sync: a remote that is slow to list costs no rewrite, one that is down
// delays nothing for long.
const startGrace = 10 * time.Second

// mayStillWin reports whether, within startGrace, a configured cluster that sorts before
// cluster has not synced yet: its definition, if it has the service, would be used.
func (c *Controller) mayStillWin(cluster string) bool {
	if time.Since(c.started) > startGrace {
		return false
	}
	for name, cl := range c.clusters {
		if name < cluster && !cl.ready() {
			return true
		}
	}
	return false
}

// unknownHolds reports whether any of our slices comes from a configured cluster that cannot
// be read yet.
func (c *Controller) unknownHolds(ours []*discoveryv1.EndpointSlice) bool {
	for _, s := range ours {
		if cl := c.clusters[s.Labels[global.LabelCluster]]; cl != nil && !cl.ready() {
			return true
		}
	}
	return false
}

// desiredSlices are the global slices of k: a copy of every slice of each cluster that has k;
// for a cluster that cannot be read yet, the copies we hold, with hints as they must be now;
// those of a withdrawn remote not ready.
// Those of clusters that dropped out or are no longer configured are not desired.
func (c *Controller) desiredSlices(k global.Key, used global.Definition, ours []*discoveryv1.EndpointSlice) ([]*discoveryv1.EndpointSlice, error) {
	hints := c.hints(k, used)
	var out []*discoveryv1.EndpointSlice
	for _, cl := range c.sortedClusters() {
		var source []*discoveryv1.EndpointSlice
		if cl.ready() {
			if cl.service(k) == nil {
				continue
			}
			var err error
			if source, err = multiremote.Indexed[*discoveryv1.EndpointSlice](cl.Slices, mirror.ByServiceName, k.String()); err != nil {
				return nil, err
			}
		} else {
			source = keptSources(cl.name, ours)
		}
		var h *discoveryv1.EndpointHints
		if hints != nil {
			h = hints.For(cl.name, cl.name == c.opts.LocalCluster)
		}
		copies := global.EndpointSlices(k, c.opts.Namespace, cl.name, source, h)
		if cl.name != c.opts.LocalCluster {
			c.write.HoldBack(cl.name, k.String(), copies)
		}
		out = append(out, copies...)
	}
	return out, nil
}

// keptSources are our copies of cluster's slices, named as their sources were.
func keptSources(cluster string, ours []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range ours {
		if s.Labels[global.LabelCluster] == cluster {
			src := s.DeepCopy()
			src.Name = s.Annotations[mirror.AnnotationSourceSlice]
			out = append(out, src)
		}
	}
	return out
}

func (c *Controller) sortedClusters() []*cluster {
	out := make([]*cluster, 0, len(c.clusters))
	for _, cl := range c.clusters {
		out = append(out, cl)
	}
	slices.SortFunc(out, func(a, b *cluster) int { return cmp.Compare(a.name, b.name) })
	return out
}

// hints are the zone hints of local-first routing, nil when the definition does not ask for
// it or the local zones cannot express it (reported once per change of zones).
func (c *Controller) hints(k global.Key, used global.Definition) *global.Hints {
	if !used.LocalFirst() {
		return nil
	}
	h := &global.Hints{LocalZones: c.zones.List()}
	if !h.Usable() {
		if c.announced.noZones(k, len(h.LocalZones)) {
			c.log.Warn("global service asks for local-first routing, but the local Nodes' zones cannot express it; kube-proxy uses every cluster's endpoints alike",
				"namespace", k.Namespace, "name", k.Name, "zones", len(h.LocalZones), "max", global.MaxZones)
		}
		return nil
	}
	return h
}

// deleteAll removes the global Service and slices of k, only those that are ours.
func (c *Controller) deleteAll(ctx context.Context, k global.Key, svc *corev1.Service, ours []*discoveryv1.EndpointSlice) error {
	var errs []error
	for _, s := range ours {
		errs = append(errs, c.write.DeleteSlice(ctx, s))
	}
	c.base.Clashes.Forget(global.ServiceName(k))
	if svc != nil {
		if got, ok := global.KeyOf(svc.Labels); ok && got == k {
			errs = append(errs, c.write.DeleteService(ctx, svc))
		}
	}
	return errors.Join(errs...)
}

// reportClash reports a local object that has the name of one of k's but is not ours.
func (c *Controller) reportClash(k global.Key, obj runtime.Object, m metav1.Object, kind string) {
	c.metrics.counters.Clashes.WithLabelValues(kind).Inc()
	if c.base.Clashes.Record(m.GetName(), k) {
		c.log.Warn("name clash: a local object has the global service's name but is not ours; leaving it alone",
			"namespace", m.GetNamespace(), "name", m.GetName(), "kind", kind, "global", k.String())
		c.base.Recorder.Eventf(obj, corev1.EventTypeWarning, "GlobalServiceNameClash",
			"%s %s/%s has the name of global service %s but was not created by %s; it is left unchanged",
			kind, m.GetNamespace(), m.GetName(), k, ownership.ServiceMirror)
	}
}

// reportConflict logs a new conflict and records it as an Event on the global Service.
func (c *Controller) reportConflict(k global.Key, m global.Merge, actual *corev1.Service) {
	c.log.Warn("global service conflict: clusters define it differently; the definition of the first cluster in name order is used",
		"namespace", k.Namespace, "name", k.Name, "used", m.Used.Cluster, "conflicting", m.Conflicts)
	obj := actual
	if obj == nil {
		obj = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: global.ServiceName(k), Namespace: c.opts.Namespace}}
	}
	c.base.Recorder.Eventf(obj, corev1.EventTypeWarning, "GlobalServiceConflict",
		"global service %s is defined differently in %v; the definition of %s (the first cluster in name order) is used",
		k, m.Conflicts, m.Used.Cluster)
}
