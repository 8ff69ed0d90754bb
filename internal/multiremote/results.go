package multiremote

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Result is the result of a sync that ended with err.
func Result(err error) (reconcile.Result, error) {
	if err != nil {
		return reconcile.Error, err
	}
	return reconcile.Success, nil
}

// Stale postpones the sync of key, whose caches lag behind our own writes. The watch event of
// the write enqueues the key again; the delayed add is a safety net.
func (c *Controller[K]) Stale(key K) (reconcile.Result, error) {
	c.Queue.AddAfter(key, time.Second)
	return reconcile.Skipped, nil
}

// Counters are the counters of a controller: its syncs (package reconcile's metrics), its write
// requests that reached the local API server and the local objects that held the name of one of
// its own. A controller without local objects leaves Writes and Clashes nil.
type Counters struct {
	Reconcile *reconcile.Metrics
	Writes    *prometheus.CounterVec
	Clashes   *prometheus.CounterVec
}

// countWrite counts a write request that reached the API server, by labelValues of
// Counters.Writes.
func (c *Controller[K]) countWrite(err error, labelValues ...string) {
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		c.cfg.Counters.Writes.WithLabelValues(labelValues...).Inc()
	}
}

// Wrote counts a create or update request by writeLabels and, when it succeeded, expects the
// local caches to show out, the object written, under key. It returns err.
func (c *Controller[K]) Wrote(key string, out metav1.Object, err error, writeLabels ...string) error {
	c.countWrite(err, writeLabels...)
	if err == nil {
		c.Expect.Wrote(key, out.GetResourceVersion())
	}
	return err
}

// Delete deletes obj, a local object of ours, on the condition that it is still the object we
// looked at: a preconditioned delete never removes an object that replaced it meanwhile. The
// request is counted by writeLabels, the deletion expected under key; an object already gone
// is no error.
func (c *Controller[K]) Delete(ctx context.Context, key string, obj metav1.Object,
	del func(context.Context, string, metav1.DeleteOptions) error, writeLabels ...string,
) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := del(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	c.countWrite(err, writeLabels...)
	if err == nil {
		c.Expect.Deleted(key, rv)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
