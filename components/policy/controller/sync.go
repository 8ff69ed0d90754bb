package controller

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

const fieldManager = ownership.Policy

// sync makes the set of src match the remote pods, reading only from caches and writing only
// what differs. A set without pods, or beyond the remote's limit of sets, is deleted.
func (c *NetworkSets) sync(ctx context.Context, src netset.Source) (reconcile.Result, error) {
	var nets []string
	rc := c.remotes[src.Cluster]
	switch {
	case rc == nil:
		// The remote is no longer configured: its sets are orphans (nets stays empty).
	case !rc.Ready():
		// Until the remote's caches have synced we do not know its pods; leave its sets alone.
		return reconcile.Skipped, nil
	default:
		var bad []string
		var refused []addrguard.Refused
		var err error
		if nets, bad, refused, err = c.nets(rc, src); err != nil {
			return reconcile.Error, err
		}
		if len(bad) > 0 {
			c.log.Warn("pod addresses that do not parse are left out", "remote", src.Cluster, "namespace", src.Namespace, "name", src.Name, "addresses", bad)
		}
		c.refusals.Report(src.Cluster, src.Namespace+"/"+src.Name, refused)
		nets = c.limit(rc, src, nets)
	}

	name := netset.SetName(src)
	obj, exists, err := c.localSets.GetByKey(name)
	if err != nil {
		return reconcile.Error, err
	}
	var actual *unstructured.Unstructured
	if exists {
		actual = obj.(*unstructured.Unstructured)
	}
	if !c.base.Expect.Satisfied(name, metaOrNil(actual)) {
		// The cache does not show our last write yet; its watch event enqueues src again.
		return c.base.Stale(src)
	}
	if actual != nil && !c.owned(src, actual) {
		return reconcile.Clash, nil
	}

	switch {
	case len(nets) == 0 && actual == nil:
		return reconcile.Success, nil
	case len(nets) == 0:
		return multiremote.Result(c.delete(ctx, actual))
	case actual == nil:
		return multiremote.Result(c.create(ctx, src, name, nets))
	default:
		return multiremote.Result(c.update(ctx, src, actual, nets))
	}
}

// nets computes the nets of src from the cached pods of its remote (netset.Nets).
func (c *NetworkSets) nets(rc *remoteCache, src netset.Source) (nets, bad []string, refused []addrguard.Refused, err error) {
	pods, err := multiremote.Indexed[*corev1.Pod](rc.pods, bySet, src.Namespace+"/"+src.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	nets, bad, refused = netset.Nets(pods, c.opts.Guard.For(src.Cluster))
	return nets, bad, refused, nil
}

// setsWithAddresses are the sets of rc's cached pods that have an address to hold.
func (c *NetworkSets) setsWithAddresses(rc *remoteCache) []netset.Source {
	var out []netset.Source
	for _, key := range rc.pods.ListIndexFuncValues(bySet) {
		src := sourceOfKey(rc.Name, key)
		if nets, _, _, err := c.nets(rc, src); err == nil && len(nets) > 0 {
			out = append(out, src)
		}
	}
	return out
}

// limit applies the remote's limits to the nets of src: none when its set is beyond the limit
// of sets (an existing set of ours is then deleted), the first by address beyond the limit of
// members. What it leaves out is logged once, when first left out, and shows in over_limit.
func (c *NetworkSets) limit(rc *remoteCache, src netset.Source, nets []string) []string {
	within, newlyOut, crossed := rc.limits.place(src, len(nets) > 0, func() []netset.Source { return c.setsWithAddresses(rc) })
	if crossed != nil {
		c.base.Queue.Add(*crossed)
	}
	if !within {
		if newlyOut {
			c.log.Warn("the remote's pods would make more sets than SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE: this one, after the first by name, is left out",
				"remote", src.Cluster, "namespace", src.Namespace, "name", src.Name, "set", netset.SetName(src), "max", rc.limits.maxSets)
		}
		return nil
	}
	kept, leftOut, newly := rc.limits.members(src, nets)
	if newly {
		c.log.Warn("a set would hold more addresses than SEMAPHORE_POLICY_MAX_SET_MEMBERS: those after the first by address are left out",
			"remote", src.Cluster, "namespace", src.Namespace, "name", src.Name, "set", netset.SetName(src), "max", rc.limits.maxMembers, "left_out", leftOut)
	}
	return kept
}

func metaOrNil(u *unstructured.Unstructured) metav1.Object {
	if u == nil {
		return nil
	}
	return u
}

// owned reports whether the set is ours and stands for src; otherwise the clash is reported
// once and the set left alone.
func (c *NetworkSets) owned(src netset.Source, u *unstructured.Unstructured) bool {
	if c.base.Owns(src, u) || c.adopts(src, u) {
		return true
	}
	c.metrics.counters.Clashes.WithLabelValues(src.Cluster).Inc()
	if c.base.Clashes.Record(u.GetName(), src) {
		c.log.Warn("name clash: a GlobalNetworkSet has the set's name but is not ours; leaving it alone",
			"remote", src.Cluster, "name", u.GetName(), "source", src.String())
		c.base.Recorder.Eventf(u, corev1.EventTypeWarning, "NetworkSetNameClash",
			"GlobalNetworkSet %s has the name of the set of %s but was not created by %s; it is left unchanged",
			u.GetName(), src, ownership.Policy)
	}
	return false
}

// adopts reports whether the set, made by the original semaphore-policy for src, one of our
// remotes, is to be taken over: the sync then writes our labels on it in place (one update),
// or deletes it when no pod stands for it any more.
func (c *NetworkSets) adopts(src netset.Source, u *unstructured.Unstructured) bool {
	made, ok := netset.MadeByOriginal(u.GetLabels())
	if !c.opts.AdoptOriginal || !ok || made != src || c.remotes[src.Cluster] == nil {
		return false
	}
	c.metrics.adopted.WithLabelValues(src.Cluster).Inc()
	c.log.Info("adopting a GlobalNetworkSet the original semaphore-policy made",
		"remote", src.Cluster, "name", u.GetName(), "source", src.String())
	return true
}

func (c *NetworkSets) create(ctx context.Context, src netset.Source, name string, nets []string) error {
	set := &calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: netset.Labels(src)},
		Spec:       calico.GlobalNetworkSetSpec{Nets: nets},
	}
	u, err := calico.ToUnstructured(set, c.opts.API)
	if err != nil {
		return err
	}
	out, err := c.sets.Create(ctx, u, metav1.CreateOptions{FieldManager: fieldManager})
	return c.base.Wrote(name, out, err, "create")
}

// update sets our labels and the nets on the actual set, keeping whatever else it holds, and
// writes only when that changes it.
func (c *NetworkSets) update(ctx context.Context, src netset.Source, actual *unstructured.Unstructured, nets []string) error {
	current, err := calico.FromUnstructured(actual)
	if err != nil {
		return err
	}
	want := netset.Labels(src)
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
	return c.base.Wrote(next.GetName(), out, err, "update")
}

// delete deletes a set of ours, on the condition that it is still the object we looked at.
func (c *NetworkSets) delete(ctx context.Context, u *unstructured.Unstructured) error {
	del := func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		return c.sets.Delete(ctx, name, opts)
	}
	return c.base.Delete(ctx, u.GetName(), u, del, "delete")
}
