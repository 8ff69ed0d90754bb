package mcscontroller

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Kinds of the objects written besides Services and EndpointSlices, the kind label of the write
// and clash metrics. A ServiceExport is only ever written its status.
const (
	kindServiceImport = "ServiceImport"
	kindServiceExport = "ServiceExport"
)

// expectKey is the expectation key of our writes of an object of kind, by its namespace/name.
func expectKey(kind string) func(nsName string) string {
	return func(nsName string) string { return kind + "/" + nsName }
}

// keyOf is expectKey of m.
func keyOf(kind string) func(m metav1.Object) string {
	return func(m metav1.Object) string { return expectKey(kind)(m.GetNamespace() + "/" + m.GetName()) }
}

// kinds sets up how the ServiceImports, derived Services and imported slices are read (from our
// caches) and written (into their own namespaces).
func (c *Controller) kinds(local kubernetes.Interface, exports mcsclient.Interface) {
	imports := exports.MulticlusterV1beta1()
	c.imports = apply.Kind[*mcsv1beta1.ServiceImport]{
		Name: kindServiceImport, Key: keyOf(kindServiceImport), Change: mcs.UpdateServiceImport,
		Cached: func(ns, name string) (*mcsv1beta1.ServiceImport, bool, error) {
			return found(c.ours.imports.ServiceImports(ns).Get(name))
		},
		In: func(ns string) apply.Client[*mcsv1beta1.ServiceImport] { return imports.ServiceImports(ns) },
	}
	core := local.CoreV1()
	c.services = apply.Kind[*corev1.Service]{
		Name: apply.KindService, Key: keyOf(apply.KindService), Change: mcs.UpdateDerivedService,
		Cached: func(ns, name string) (*corev1.Service, bool, error) {
			return found(c.ours.services.Services(ns).Get(name))
		},
		In: func(ns string) apply.Client[*corev1.Service] { return core.Services(ns) },
	}
	discovery := local.DiscoveryV1()
	c.slices = apply.Kind[*discoveryv1.EndpointSlice]{
		Name: apply.KindEndpointSlice, Key: keyOf(apply.KindEndpointSlice), Change: mirror.UpdateEndpointSlice,
		Cached: func(ns, name string) (*discoveryv1.EndpointSlice, bool, error) {
			obj, exists, err := c.ours.slices.GetByKey(ns + "/" + name)
			if !exists || err != nil {
				return nil, false, err
			}
			return obj.(*discoveryv1.EndpointSlice), true, nil
		},
		In: func(ns string) apply.Client[*discoveryv1.EndpointSlice] { return discovery.EndpointSlices(ns) },
	}
}

// found turns a lister's answer into Kind.Cached's: not found is no error.
func found[T any](obj T, err error) (T, bool, error) {
	if apierrors.IsNotFound(err) {
		var zero T
		return zero, false, nil
	}
	return obj, err == nil, err
}

// owned returns the ownership check of objects of kind k: whether one is ours and stands for
// the key; when it is not, the clash is reported and the object left alone.
func owned[T apply.Object](c *Controller, k apply.Kind[T]) func(mcs.Key, T) bool {
	return func(key mcs.Key, obj T) bool {
		if c.base.Owns(key, obj) {
			return true
		}
		c.reportClash(key, obj, k.Name)
		return false
	}
}

// reportClash reports a local object that has the name of one of k's but is not ours: logged
// and recorded as an Event once per clash, counted every time.
func (c *Controller) reportClash(k mcs.Key, obj apply.Object, kind string) {
	c.metrics.counters.Clashes.WithLabelValues(kind).Inc()
	if c.base.Clashes.Record(c.base.ObjectName(obj), k) {
		c.log.Warn("name clash: a local object has the name of one of an exported Service's but is not ours; leaving it alone",
			"namespace", obj.GetNamespace(), "name", obj.GetName(), "kind", kind, "service", k.String())
		c.base.Recorder.Eventf(obj, corev1.EventTypeWarning, "ServiceImportNameClash",
			"%s %s/%s has the name of one of the objects of the multi-cluster service %s but was not created by %s; it is left unchanged",
			kind, obj.GetNamespace(), obj.GetName(), k, ownership.ServiceMirror)
	}
}
