package mirrorcontroller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// sync makes the local mirror of src match the remote Service, reading only from caches and
// writing only what differs.
func (c *Controller) sync(ctx context.Context, src mirror.Source) (reconcile.Result, error) {
	rc := c.remotes[src.Cluster]
	if rc == nil {
		// The remote is no longer configured: its mirrors are orphans.
		return multiremote.Result(c.deleteMirror(ctx, src))
	}
	if !rc.Ready() {
		// Until the remote's caches have synced we do not know what it holds; leave its
		// mirrors alone, but for withdrawing their endpoints once the outage policy says so.
		// Everything is enqueued again once it has synced.
		if c.opts.Withdraw.Withdrawn(src.Cluster) {
			return multiremote.Result(c.withdrawKept(ctx, src))
		}
		return reconcile.Skipped, nil
	}
	remoteSvc, err := rc.Services.Services(src.Namespace).Get(src.Name)
	if apierrors.IsNotFound(err) {
		return multiremote.Result(c.deleteMirror(ctx, src))
	}
	if err != nil {
		return reconcile.Error, err
	}
	switch rc.Limited.Admission(limit.Key{Namespace: src.Namespace, Name: src.Name}) {
	case limit.Over:
		// Beyond the remote's limit: not mirrored, and a mirror made before is ours to delete.
		return multiremote.Result(c.deleteMirror(ctx, src))
	case limit.Unknown:
		// The limit's handler has not seen this Service yet; it enqueues it once it has.
		return reconcile.Skipped, nil
	}

	clashed, err := c.write.Service(ctx, src, mirror.Service(src, c.opts.Namespace, remoteSvc))
	if err != nil || clashed {
		return c.write.Result(src, clashed, err)
	}
	slices, err := multiremote.Indexed[*discoveryv1.EndpointSlice](rc.Slices, mirror.ByServiceName, src.Namespace+"/"+src.Name)
	if err != nil {
		return reconcile.Error, err
	}
	existing, err := c.write.Ours(src)
	if err != nil {
		return reconcile.Error, err
	}
	desired := mirror.EndpointSlices(src, c.opts.Namespace, slices)
	c.write.HoldBack(src.Cluster, src.Namespace+"/"+src.Name, desired)
	return c.write.Finish(ctx, src, mirror.ServiceName(src), desired, existing)
}

// withdrawKept marks the endpoints of the mirror slices we hold for src not ready, for a remote
// whose caches never synced: what it holds now is unknown, what we hold is withdrawn.
func (c *Controller) withdrawKept(ctx context.Context, src mirror.Source) error {
	existing, err := c.write.Ours(src)
	if err != nil {
		return err
	}
	desired := make([]*discoveryv1.EndpointSlice, 0, len(existing))
	for _, s := range existing {
		desired = append(desired, s.DeepCopy())
	}
	_, err = c.write.Slices(ctx, src, withdraw.Endpoints(desired), existing)
	return err
}

// reportClash reports a local object that has the name of a mirror of src but is not ours.
func (c *Controller) reportClash(src mirror.Source, obj runtime.Object, m metav1.Object, kind string) {
	c.metrics.counters.Clashes.WithLabelValues(src.Cluster, kind).Inc()
	if c.base.Clashes.Record(m.GetName(), src) {
		c.log.Warn("name clash: a local object has the mirror's name but is not ours; leaving it alone",
			"remote", src.Cluster, "namespace", m.GetNamespace(), "name", m.GetName(), "kind", kind, "source", src.String())
		c.base.Recorder.Eventf(obj, corev1.EventTypeWarning, "MirrorNameClash",
			"%s %s/%s has the name of the mirror of %s but was not created by %s; it is left unchanged",
			kind, m.GetNamespace(), m.GetName(), src, ownership.ServiceMirror)
	}
}

// deleteMirror removes the mirror Service and slices of src, only those that are ours.
func (c *Controller) deleteMirror(ctx context.Context, src mirror.Source) error {
	var errs []error
	existing, err := c.write.Ours(src)
	errs = append(errs, err)
	for _, s := range existing {
		errs = append(errs, c.write.DeleteSlice(ctx, s))
	}
	name := mirror.ServiceName(src)
	c.base.Clashes.Forget(name)
	svc, err := c.write.ServiceCache.Services(c.opts.Namespace).Get(name)
	if err == nil && ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) {
		if s, ok := mirror.SourceOf(svc.Labels); ok && s == src {
			errs = append(errs, c.write.DeleteService(ctx, svc))
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
