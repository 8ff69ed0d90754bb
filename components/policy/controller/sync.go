package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Reconcile results, the result label of reconcile_total.
const (
	resultSuccess = reconcile.Success
	resultError   = reconcile.Error
	resultClash   = reconcile.Clash
	resultSkipped = reconcile.Skipped
)

const fieldManager = labels.Policy

// sync makes the set of src match the remote pods, reading only from caches and writing only
// what differs. A set without pods is deleted.
func (c *Controller) sync(ctx context.Context, src netset.Source) (string, error) {
	var nets []string
	rc := c.remotes[src.Cluster]
	switch {
	case rc == nil:
		// The remote is no longer configured: its sets are orphans (nets stays empty).
	case !rc.ready.Load():
		// Until the remote's caches have synced we do not know its pods; leave its sets alone.
		return resultSkipped, nil
	default:
		objs, err := rc.pods.ByIndex(bySet, src.Namespace+"/"+src.Name)
		if err != nil {
			return resultError, err
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			pods = append(pods, o.(*corev1.Pod))
		}
		var bad []string
		nets, bad = netset.Nets(pods)
		if len(bad) > 0 {
			c.log.Warn("pod addresses that do not parse are left out", "remote", src.Cluster, "namespace", src.Namespace, "name", src.Name, "addresses", bad)
		}
	}

	name := netset.SetName(src)
	obj, exists, err := c.localSets.GetByKey(name)
	if err != nil {
		return resultError, err
	}
	var actual *unstructured.Unstructured
	if exists {
		actual = obj.(*unstructured.Unstructured)
	}
	if !c.expect.Satisfied(name, metaOrNil(actual)) {
		// The cache does not show our last write yet; its watch event enqueues src again.
		c.queue.AddAfter(src, time.Second)
		return resultSkipped, nil
	}
	if actual != nil && !c.owned(src, actual) {
		return resultClash, nil
	}

	switch {
	case len(nets) == 0 && actual == nil:
		return resultSuccess, nil
	case len(nets) == 0:
		return c.result(c.delete(ctx, actual))
	case actual == nil:
		return c.result(c.create(ctx, src, name, nets))
	default:
		return c.result(c.update(ctx, src, actual, nets))
	}
}

func metaOrNil(u *unstructured.Unstructured) metav1.Object {
	if u == nil {
		return nil
	}
	return u
}

func (c *Controller) result(err error) (string, error) {
	if err != nil {
		return resultError, err
	}
	return resultSuccess, nil
}

// owned reports whether the set is ours and stands for src; otherwise the clash is reported
// once and the set left alone.
func (c *Controller) owned(src netset.Source, u *unstructured.Unstructured) bool {
	if labels.IsManagedBy(u.GetLabels(), labels.Policy) {
		if s, ok := netset.SourceOf(u.GetLabels()); ok && s == src {
			c.clashes.Resolve(u.GetName(), src)
			return true
		}
	}
	c.metrics.clashes.WithLabelValues(src.Cluster).Inc()
	if c.clashes.Record(u.GetName(), src) {
		c.log.Warn("name clash: a GlobalNetworkSet has the set's name but is not ours; leaving it alone",
			"remote", src.Cluster, "name", u.GetName(), "source", src.String())
		c.recorder.Eventf(u, corev1.EventTypeWarning, "NetworkSetNameClash",
			"GlobalNetworkSet %s has the name of the set of %s but was not created by %s; it is left unchanged",
			u.GetName(), src, labels.Policy)
	}
	return false
}

func (c *Controller) create(ctx context.Context, src netset.Source, name string, nets []string) error {
	set := &calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: src.Labels()},
		Spec:       calico.GlobalNetworkSetSpec{Nets: nets},
	}
	u, err := calico.ToUnstructured(set, c.opts.API)
	if err != nil {
		return err
	}
	out, err := c.sets.Create(ctx, u, metav1.CreateOptions{FieldManager: fieldManager})
	c.countWrite("create", err)
	if err == nil {
		c.expect.Wrote(name, out.GetResourceVersion())
	}
	return err
}

// update sets our labels and the nets on the actual set, keeping whatever else it holds, and
// writes only when that changes it.
func (c *Controller) update(ctx context.Context, src netset.Source, actual *unstructured.Unstructured, nets []string) error {
	current, err := calico.FromUnstructured(actual)
	if err != nil {
		return err
	}
	want := src.Labels()
	same := slices.Equal(current.Spec.Nets, nets)
	for k, v := range want {
		if current.Labels[k] != v {
			same = false
		}
	}
	if same {
		return nil
	}
	next := actual.DeepCopy()
	l := next.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range want {
		l[k] = v
	}
	next.SetLabels(l)
	if err := unstructured.SetNestedStringSlice(next.Object, nets, "spec", "nets"); err != nil {
		return err
	}
	out, err := c.sets.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
	c.countWrite("update", err)
	if err == nil {
		c.expect.Wrote(next.GetName(), out.GetResourceVersion())
	}
	return err
}

// delete deletes a set of ours, on the condition that it is still the object we looked at.
func (c *Controller) delete(ctx context.Context, u *unstructured.Unstructured) error {
	uid, rv := u.GetUID(), u.GetResourceVersion()
	err := c.sets.Delete(ctx, u.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	c.countWrite("delete", err)
	if err == nil {
		c.expect.Deleted(u.GetName(), rv)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// countWrite counts a write request that reached the API server.
func (c *Controller) countWrite(verb string, err error) {
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		c.metrics.writes.WithLabelValues(verb).Inc()
	}
}
