// Package adopt takes over what the original semaphore-service-mirror made in the mirror
// namespace, when SEMAPHORE_ADOPT_ORIGINAL asks for it: its mirror Services
// (<prefix>-<namespace>-73736d-<name>, labelled mirrored-svc=true and
// mirror-svc-prefix-sync=<prefix>) and global Services (gl-<namespace>-73736d-<name>, labelled
// global-svc=true) have the names ours have, so they are adopted in place, keeping their
// ClusterIPs; their Endpoints and EndpointSlices are deleted once ours are written.
package adopt

import (
	"context"
	"errors"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// The original's labels and annotation, and its EndpointSlices' managed-by value.
const (
	LabelMirrored            = "mirrored-svc"
	LabelPrefix              = "mirror-svc-prefix-sync"
	LabelGlobal              = "global-svc"
	AnnotationGlobalClusters = "global-svc-clusters"
	SliceManager             = "semaphore-service-mirror"
)

// isMirror reports whether a Service's labels are those the original gave its mirror of a
// Service of remote (whose name it used as the prefix), and not ours.
func isMirror(l map[string]string, remote string) bool {
	return l[LabelMirrored] == "true" && l[LabelPrefix] == remote && l[ownership.ManagedBy] == ""
}

// isGlobal reports whether a Service's labels are those the original gave its global
// Services, and not ours.
func isGlobal(l map[string]string) bool {
	return l[LabelGlobal] == "true" && l[ownership.ManagedBy] == ""
}

// Strip removes the original's labels and annotation from an adopted Service, so that the
// original, were it still running, no longer takes it for its own.
func Strip(svc *corev1.Service) {
	for _, k := range []string{LabelMirrored, LabelPrefix, LabelGlobal} {
		delete(svc.Labels, k)
	}
	delete(svc.Annotations, AnnotationGlobalClusters)
}

// Adopter adopts the original's Services and removes its Endpoints and EndpointSlices. A nil
// Adopter adopts nothing.
type Adopter struct {
	client    kubernetes.Interface
	namespace string
	log       *slog.Logger
	adopted   *prometheus.CounterVec
	removed   *prometheus.CounterVec

	sliceInformer, endpointsInformer cache.SharedIndexInformer
}

// NewMetrics creates the adoption metrics on f (for the metrics reference as well).
func NewMetrics(f *metrics.Factory) (adopted, removed *prometheus.CounterVec) {
	return f.CounterVec("adopted_total", "Services the original semaphore-service-mirror made that were adopted in place (SEMAPHORE_ADOPT_ORIGINAL), by kind (mirror, global).", "kind"),
		f.CounterVec("original_objects_removed_total", "Endpoints and EndpointSlices of the original semaphore-service-mirror deleted once ours replaced them, by kind.", "kind")
}

const byService = "service"

// NewAdopter watches, in namespace, only what the original made: its Endpoints (label
// mirrored-svc=true) and its EndpointSlices (managed by it). Neither is ours: our slices have
// another managed-by value, and we write no Endpoints.
func NewAdopter(client kubernetes.Interface, namespace string, resync time.Duration, f *metrics.Factory, log *slog.Logger) *Adopter {
	a := &Adopter{client: client, namespace: namespace, log: log}
	a.adopted, a.removed = NewMetrics(f)
	a.sliceInformer = selected(client, resync, namespace, discoveryv1.LabelManagedBy+"="+SliceManager).Discovery().V1().EndpointSlices().Informer()
	utilruntime.Must(a.sliceInformer.AddIndexers(cache.Indexers{byService: func(obj any) ([]string, error) {
		return []string{obj.(*discoveryv1.EndpointSlice).Labels[discoveryv1.LabelServiceName]}, nil
	}}))
	a.endpointsInformer = selected(client, resync, namespace, LabelMirrored+"=true").Core().V1().Endpoints().Informer()
	return a
}

// selected is a factory of informers of namespace that list only what selector selects.
func selected(client kubernetes.Interface, resync time.Duration, namespace, selector string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(trim.ManagedFields))
}

// Start runs the watches until ctx is done and waits for them to sync: the controllers start
// after it, so that no leftover is missed.
func (a *Adopter) Start(ctx context.Context) bool {
	if a == nil {
		return true
	}
	go a.sliceInformer.RunWithContext(ctx)
	go a.endpointsInformer.RunWithContext(ctx)
	return cache.WaitForCacheSync(ctx.Done(), a.sliceInformer.HasSynced, a.endpointsInformer.HasSynced)
}

// AdoptMirror reports whether svc, holding the name of our mirror of a Service of remote, is
// the original's mirror of it, to be adopted; it counts and logs the adoption.
func (a *Adopter) AdoptMirror(remote string, svc metav1.Object) bool {
	return a != nil && isMirror(svc.GetLabels(), remote) && a.adopt("mirror", svc)
}

// AdoptGlobal is AdoptMirror for a global Service.
func (a *Adopter) AdoptGlobal(svc metav1.Object) bool {
	return a != nil && isGlobal(svc.GetLabels()) && a.adopt("global", svc)
}

func (a *Adopter) adopt(kind string, svc metav1.Object) bool {
	a.adopted.WithLabelValues(kind).Inc()
	a.log.Info("adopting a Service the original semaphore-service-mirror made", "namespace", svc.GetNamespace(), "name", svc.GetName(), "kind", kind)
	return true
}

// RemoveLeftovers deletes the original's Endpoints and EndpointSlices of Service service:
// called once ours are written, so that the Service never lacks endpoints. Each delete is
// preconditioned on the object we saw.
func (a *Adopter) RemoveLeftovers(ctx context.Context, service string) error {
	if a == nil {
		return nil
	}
	var errs []error
	slices, _ := a.sliceInformer.GetIndexer().ByIndex(byService, service)
	for _, obj := range slices {
		s := obj.(*discoveryv1.EndpointSlice)
		errs = append(errs, a.remove(ctx, "EndpointSlice", s, a.client.DiscoveryV1().EndpointSlices(a.namespace).Delete))
	}
	if obj, ok, _ := a.endpointsInformer.GetStore().GetByKey(a.namespace + "/" + service); ok {
		e := obj.(*corev1.Endpoints) //nolint:staticcheck // the original wrote Endpoints: removing them is the point.
		errs = append(errs, a.remove(ctx, "Endpoints", e, a.client.CoreV1().Endpoints(a.namespace).Delete))
	}
	return errors.Join(errs...)
}

func (a *Adopter) remove(ctx context.Context, kind string, m metav1.Object, del func(context.Context, string, metav1.DeleteOptions) error) error {
	uid := m.GetUID()
	err := del(ctx, m.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		a.removed.WithLabelValues(kind).Inc()
		a.log.Info("deleted what the original semaphore-service-mirror made, now replaced", "namespace", m.GetNamespace(), "name", m.GetName(), "kind", kind)
	}
	return err
}
