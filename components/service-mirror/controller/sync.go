package controller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// errStale says a cache does not show our last write yet; the sync is retried once it does.
var errStale = errors.New("cache does not show our last write yet")

const (
	kindService       = "Service"
	kindEndpointSlice = "EndpointSlice"
)

// sync makes the local mirror of src match the remote Service, reading only from caches and
// writing only what differs.
func (c *Controller) sync(ctx context.Context, src mirror.Source) (string, error) {
	rc := c.remotes[src.Cluster]
	if rc == nil {
		// The remote is no longer configured: its mirrors are orphans.
		return multiremote.Result(c.deleteMirror(ctx, src))
	}
	if !rc.Ready() {
		// Until the remote's caches have synced we do not know what it holds; leave its
		// mirrors alone. Everything is enqueued again once it has synced.
		return reconcile.Skipped, nil
	}
	remoteSvc, err := rc.services.Services(src.Namespace).Get(src.Name)
	if apierrors.IsNotFound(err) {
		return multiremote.Result(c.deleteMirror(ctx, src))
	}
	if err != nil {
		return reconcile.Error, err
	}

	desired := mirror.Service(src, c.opts.Namespace, remoteSvc)
	clashed, err := c.applyService(ctx, src, desired)
	if errors.Is(err, errStale) {
		return c.base.Stale(src)
	}
	if err != nil || clashed {
		return c.resultOrClash(clashed, err)
	}

	slices, err := multiremote.Indexed[*discoveryv1.EndpointSlice](rc.slices, byServiceName, src.Namespace+"/"+src.Name)
	if err != nil {
		return reconcile.Error, err
	}
	clashed, err = c.applySlices(ctx, src, mirror.EndpointSlices(src, c.opts.Namespace, slices))
	if errors.Is(err, errStale) {
		return c.base.Stale(src)
	}
	return c.resultOrClash(clashed, err)
}

func (c *Controller) resultOrClash(clashed bool, err error) (string, error) {
	if err != nil {
		return reconcile.Error, err
	}
	if clashed {
		return reconcile.Clash, nil
	}
	return reconcile.Success, nil
}

// owned reports whether obj is a mirror of src; when it has the name of one but is not ours,
// the clash is reported and the object left alone.
func (c *Controller) owned(src mirror.Source, obj runtime.Object, m metav1.Object, kind string) bool {
	if c.base.Owns(src, m) {
		return true
	}
	c.metrics.clashes.WithLabelValues(src.Cluster, kind).Inc()
	if c.base.Clashes.Record(m.GetName(), src) {
		c.log.Warn("name clash: a local object has the mirror's name but is not ours; leaving it alone",
			"remote", src.Cluster, "namespace", m.GetNamespace(), "name", m.GetName(), "kind", kind, "source", src.String())
		c.base.Recorder.Eventf(obj, corev1.EventTypeWarning, "MirrorNameClash",
			"%s %s/%s has the name of the mirror of %s but was not created by %s; it is left unchanged",
			kind, m.GetNamespace(), m.GetName(), src, labels.ServiceMirror)
	}
	return false
}

func (c *Controller) applyService(ctx context.Context, src mirror.Source, desired *corev1.Service) (clashed bool, err error) {
	services := c.local.CoreV1().Services(c.opts.Namespace)
	key := kindService + "/" + desired.Name
	actual, err := c.localServices.Services(c.opts.Namespace).Get(desired.Name)
	if apierrors.IsNotFound(err) {
		if !c.base.Expect.Satisfied(key, nil) {
			return false, errStale
		}
		return false, c.createService(ctx, desired)
	}
	if err != nil {
		return false, err
	}
	if !c.base.Expect.Satisfied(key, actual) {
		return false, errStale
	}
	if !c.owned(src, actual, actual, kindService) {
		return true, nil
	}
	change, next := mirror.UpdateService(desired, actual)
	switch change {
	case mirror.Update:
		out, err := services.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return false, c.base.Wrote(key, out, err, kindService, "update")
	case mirror.Recreate:
		if err := c.deleteService(ctx, actual); err != nil {
			return false, err
		}
		return false, c.createService(ctx, desired)
	}
	return false, nil
}

const fieldManager = labels.ServiceMirror

func (c *Controller) createService(ctx context.Context, svc *corev1.Service) error {
	out, err := c.local.CoreV1().Services(c.opts.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: fieldManager})
	return c.base.Wrote(kindService+"/"+svc.Name, out, err, kindService, "create")
}

// deleteService deletes a mirror Service, on the condition that it is still the object we
// looked at: a preconditioned delete never removes an object that replaced it meanwhile.
func (c *Controller) deleteService(ctx context.Context, svc *corev1.Service) error {
	return c.base.Delete(ctx, kindService+"/"+svc.Name, svc, c.local.CoreV1().Services(c.opts.Namespace).Delete, kindService, "delete")
}

func (c *Controller) applySlices(ctx context.Context, src mirror.Source, desired []*discoveryv1.EndpointSlice) (clashed bool, err error) {
	slices := c.local.DiscoveryV1().EndpointSlices(c.opts.Namespace)
	want := make(map[string]bool, len(desired))
	var errs []error
	create := func(d *discoveryv1.EndpointSlice) error {
		out, err := slices.Create(ctx, d, metav1.CreateOptions{FieldManager: fieldManager})
		return c.base.Wrote(kindEndpointSlice+"/"+d.Name, out, err, kindEndpointSlice, "create")
	}
	for _, d := range desired {
		want[d.Name] = true
		key := kindEndpointSlice + "/" + d.Name
		obj, exists, err := c.localSlices.GetByKey(c.opts.Namespace + "/" + d.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !exists {
			if !c.base.Expect.Satisfied(key, nil) {
				errs = append(errs, errStale)
				continue
			}
			errs = append(errs, create(d))
			continue
		}
		actual := obj.(*discoveryv1.EndpointSlice)
		if !c.base.Expect.Satisfied(key, actual) {
			errs = append(errs, errStale)
			continue
		}
		if !c.owned(src, actual, actual, kindEndpointSlice) {
			clashed = true
			continue
		}
		change, next := mirror.UpdateEndpointSlice(d, actual)
		switch change {
		case mirror.Update:
			out, err := slices.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
			errs = append(errs, c.base.Wrote(key, out, err, kindEndpointSlice, "update"))
		case mirror.Recreate:
			if err := c.deleteSlice(ctx, actual); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, create(d))
		}
	}
	// Our slices of this source that no longer have a remote counterpart.
	existing, err := multiremote.Indexed[*discoveryv1.EndpointSlice](c.localSlices, multiremote.BySource, src.String())
	if err != nil {
		return clashed, errors.Join(append(errs, err)...)
	}
	for _, s := range existing {
		if !want[s.Name] {
			if !c.base.Expect.Satisfied(kindEndpointSlice+"/"+s.Name, s) {
				errs = append(errs, errStale)
				continue
			}
			errs = append(errs, c.deleteSlice(ctx, s))
		}
	}
	return clashed, errors.Join(errs...)
}

// deleteSlice deletes a mirror slice, on the condition that it is still the object we looked at.
func (c *Controller) deleteSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	return c.base.Delete(ctx, kindEndpointSlice+"/"+s.Name, s, c.local.DiscoveryV1().EndpointSlices(c.opts.Namespace).Delete, kindEndpointSlice, "delete")
}

// deleteMirror removes the mirror Service and slices of src, only those that are ours.
func (c *Controller) deleteMirror(ctx context.Context, src mirror.Source) error {
	var errs []error
	existing, err := multiremote.Indexed[*discoveryv1.EndpointSlice](c.localSlices, multiremote.BySource, src.String())
	errs = append(errs, err)
	for _, s := range existing {
		errs = append(errs, c.deleteSlice(ctx, s))
	}
	name := mirror.ServiceName(src)
	c.base.Clashes.Forget(name)
	svc, err := c.localServices.Services(c.opts.Namespace).Get(name)
	if err == nil && labels.IsManagedBy(svc.Labels, labels.ServiceMirror) {
		if s, ok := mirror.SourceOf(svc.Labels); ok && s == src {
			errs = append(errs, c.deleteService(ctx, svc))
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
