package mcscontroller

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// sync makes the local objects of exported Service k match what every cluster exports, and the
// local ServiceExport's conditions say so, reading only from caches and writing only what
// differs.
func (c *Controller) sync(ctx context.Context, k mcs.Key) (reconcile.Result, error) {
	r := c.readable()
	ours, err := multiremote.Indexed[*discoveryv1.EndpointSlice](c.ours.slices, c.base.SourceIndex(), k.String())
	if err != nil {
		return reconcile.Error, err
	}
	actual, _, err := c.imports.Cached(k.Namespace, k.Name)
	if err != nil {
		return reconcile.Error, err
	}
	imp, ok := mcs.Merge(c.exportsOf(k, r))
	if !ok || !c.namespaceUsable(k.Namespace) {
		if !ok && c.unknownHolds(ours, r) {
			// A cluster we cannot read yet exported it: keep what it contributed until we can.
			return reconcile.Skipped, nil
		}
		err := c.deleteAll(ctx, k, actual, ours)
		return multiremote.Result(errors.Join(err, c.writeExportStatus(ctx, k, imp, ok, false, r)))
	}
	if actual == nil && c.mayStillWin(r) {
		// Created now, it could be rewritten once that cluster synced: wait for it, or for the
		// end of the grace period.
		c.base.Queue.AddAfter(k, startGrace-time.Since(c.started))
		return reconcile.Skipped, nil
	}
	imp = c.keepFrom(imp, actual, r)
	clashed, err := c.writeImport(ctx, k, imp)
	// Imported: the ServiceImport is there, ours, whether or not the cache shows our last write.
	imported := !clashed && (err == nil || (apply.IsStale(err) && actual != nil))
	if err == nil && !clashed {
		clashed, err = apply.PutAll(ctx, c.base, owned(c, c.slices), c.slices, k, c.desiredSlices(k, imp, ours, r), ours)
	}
	statusErr := c.writeExportStatus(ctx, k, imp, true, imported, r)
	return apply.Result(c.base, k, clashed, errors.Join(err, statusErr))
}

// exportsOf are the exports of k in every cluster that can be read and has a ServiceExport of it.
func (c *Controller) exportsOf(k mcs.Key, r readable) []mcs.Export {
	var out []mcs.Export
	for _, cl := range c.clusters {
		if !r[cl.name] {
			continue
		}
		se, err := cl.exports.ServiceExports(k.Namespace).Get(k.Name)
		if err != nil {
			continue
		}
		e := mcs.Export{Cluster: cl.name, Created: se.CreationTimestamp.Time, Spec: se.Spec}
		if svc, err := cl.services.Services(k.Namespace).Get(k.Name); err == nil {
			e.Service = svc
		}
		out = append(out, e)
	}
	return out
}

// namespaceUsable reports whether the local namespace exists and is not being deleted: imports
// are written only into a namespace the local cluster has (namespace sameness is the user's).
func (c *Controller) namespaceUsable(name string) bool {
	ns, err := c.ours.namespaces.Get(name)
	return err == nil && ns.Status.Phase != corev1.NamespaceTerminating && ns.DeletionTimestamp == nil
}

// startGrace is how long after the start a new ServiceImport waits for every remote to sync:
// any of them may hold an older export, whose properties would win.
const startGrace = 10 * time.Second

// mayStillWin reports whether, within startGrace, a configured cluster has not synced yet.
func (c *Controller) mayStillWin(r readable) bool {
	return time.Since(c.started) <= startGrace && r.someNot()
}

// readable says which clusters a sync reads, decided once at its start: a remote whose caches
// sync while the sync runs is the next sync's (its sync enqueues everything again), never taken
// for readable by one part of a sync and for unreadable by another.
type readable map[string]bool

func (c *Controller) readable() readable {
	r := make(readable, len(c.clusters))
	for name, cl := range c.clusters {
		r[name] = cl.ready()
	}
	return r
}

// someNot reports whether a configured cluster cannot be read yet.
func (r readable) someNot() bool {
	for _, ok := range r {
		if !ok {
			return true
		}
	}
	return false
}

// unreadable reports whether name is a configured cluster that cannot be read yet.
func (r readable) unreadable(name string) bool {
	ok, configured := r[name]
	return configured && !ok
}

// keepFrom keeps the properties of the existing import while the cluster they came from cannot
// be read: a restart or an outage of that cluster rewrites nothing.
func (c *Controller) keepFrom(imp mcs.Import, actual *mcsv1beta1.ServiceImport, r readable) mcs.Import {
	if actual == nil {
		return imp
	}
	from := actual.Annotations[mcs.AnnotationExportFrom]
	if !r.unreadable(from) {
		return imp
	}
	return imp.KeepProperties(from, actual)
}

// unknownHolds reports whether any of our slices comes from a configured cluster that cannot be
// read yet.
func (c *Controller) unknownHolds(ours []*discoveryv1.EndpointSlice, r readable) bool {
	for _, s := range ours {
		if r.unreadable(s.Labels[mcs.LabelCluster]) {
			return true
		}
	}
	return false
}

// writeImport writes the derived Service of a ClusterSetIP import (removing one a headless
// import no longer has), then the ServiceImport with the derived Service's addresses.
func (c *Controller) writeImport(ctx context.Context, k mcs.Key, imp mcs.Import) (clashed bool, err error) {
	var derived *corev1.Service
	if imp.Spec.Type == mcsv1beta1.ClusterSetIP {
		derived, clashed, err = apply.Put(ctx, c.base, owned(c, c.services), c.services, k, mcs.DerivedService(k, imp))
		if err != nil || clashed {
			return clashed, err
		}
	} else if err := c.deleteDerived(ctx, k); err != nil {
		return false, err
	}
	_, clashed, err = apply.Put(ctx, c.base, owned(c, c.imports), c.imports, k, mcs.ServiceImport(k, imp, derived))
	return clashed, err
}

// desiredSlices are the imported slices of k: a copy of every slice of each cluster whose export
// is valid; for a cluster that cannot be read yet, the copies we hold. Those of a remote are
// held back as a mirror's are (addresses it may not publish, an outage policy).
func (c *Controller) desiredSlices(k mcs.Key, imp mcs.Import, ours []*discoveryv1.EndpointSlice, r readable) []*discoveryv1.EndpointSlice {
	hints := c.hints(imp)
	var out []*discoveryv1.EndpointSlice
	for _, name := range slices.Sorted(maps.Keys(c.clusters)) {
		cl := c.clusters[name]
		var copies []*discoveryv1.EndpointSlice
		switch {
		case !r[cl.name]:
			copies = kept(cl.name, ours)
		case slices.Contains(imp.Clusters, cl.name):
			source, _ := multiremote.Indexed[*discoveryv1.EndpointSlice](cl.slices, mirror.ByServiceName, k.String())
			copies = mcs.EndpointSlices(k, imp, cl.name, c.ids.of(cl.name), source)
			if cl.remote != nil {
				c.opts.HoldBack(cl.name, k.String(), copies)
			}
		}
		var h *discoveryv1.EndpointHints
		if hints != nil {
			h = hints.For(cl.name, cl.name == c.opts.LocalCluster)
		}
		for _, s := range copies {
			for i := range s.Endpoints {
				s.Endpoints[i].Hints = h.DeepCopy()
			}
		}
		out = append(out, copies...)
	}
	return out
}

// hints are the zone hints of local-first routing: an import whose exports ask for
// trafficDistribution PreferSameZone (or PreferClose, its deprecated name) gets, as a
// local-first global service does, the local endpoints hinted for every local zone and the
// others' for zones of their own, so kube-proxy keeps the traffic in the local cluster while any
// local endpoint is ready. nil when the import does not ask for it, or the local Nodes' zones
// cannot express it.
func (c *Controller) hints(imp mcs.Import) *global.Hints {
	switch ptr.Deref(imp.Spec.TrafficDistribution, "") {
	case corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferClose:
	default:
		return nil
	}
	h := &global.Hints{LocalZones: c.opts.Zones.List()}
	if !h.Usable() {
		return nil
	}
	return h
}

// kept are our copies of cluster's slices, as they are.
func kept(cluster string, ours []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range ours {
		if s.Labels[mcs.LabelCluster] == cluster {
			out = append(out, s.DeepCopy())
		}
	}
	return out
}

// deleteAll removes the ServiceImport, derived Service and slices of k, only those that are ours.
func (c *Controller) deleteAll(ctx context.Context, k mcs.Key, actual *mcsv1beta1.ServiceImport, ours []*discoveryv1.EndpointSlice) error {
	var errs []error
	for _, s := range ours {
		errs = append(errs, apply.Remove(ctx, c.base, c.slices, s))
	}
	errs = append(errs, c.deleteDerived(ctx, k))
	if actual != nil && c.base.Owns(k, actual) {
		errs = append(errs, apply.Remove(ctx, c.base, c.imports, actual))
	}
	return errors.Join(errs...)
}

// deleteDerived removes the derived Service of k when it is ours.
func (c *Controller) deleteDerived(ctx context.Context, k mcs.Key) error {
	svc, exists, err := c.services.Cached(k.Namespace, mcs.DerivedServiceName(k))
	if err != nil || !exists || !c.base.Owns(k, svc) {
		return err
	}
	return apply.Remove(ctx, c.base, c.services, svc)
}

// writeExportStatus sets the conditions of the local ServiceExport of k, when there is one:
// only a change is written.
func (c *Controller) writeExportStatus(ctx context.Context, k mcs.Key, imp mcs.Import, ok, imported bool, r readable) error {
	local := c.clusters[c.opts.LocalCluster]
	se, err := local.exports.ServiceExports(k.Namespace).Get(k.Name)
	if err != nil {
		return nil //nolint:nilerr // no local export, nothing to say
	}
	e := mcs.Export{Cluster: local.name, Created: se.CreationTimestamp.Time, Spec: se.Spec}
	if svc, err := local.services.Services(k.Namespace).Get(k.Name); err == nil {
		e.Service = svc
	}
	expect := keyOf(kindServiceExport)(se)
	if !c.base.Expect.Satisfied(expect, se) {
		return nil // the event of our last write enqueues k again
	}
	desired := mcs.Conditions(e, imp, ok, imported)
	if r.someNot() {
		desired = mcs.KeepRaisedConflict(desired, se.Status.Conditions)
	}
	conditions, changed := mcs.SetConditions(se.Status.Conditions, desired, se.Generation)
	if !changed {
		return nil
	}
	next := se.DeepCopy()
	next.Status.Conditions = conditions
	out, err := c.exports.MulticlusterV1beta1().ServiceExports(k.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: ownership.ServiceMirror})
	return c.base.Wrote(expect, out, err, kindServiceExport, "update")
}
