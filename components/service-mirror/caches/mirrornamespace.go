package caches

import (
	"time"

	"k8s.io/client-go/informers"
	corev1 "k8s.io/client-go/informers/core/v1"
	discoveryv1 "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/trim"
)

// MirrorNamespace is the one watch of the local mirror namespace that the mirrors and the
// global services share. Both write their Services and EndpointSlices there, and each must see
// the other's (a name both want is a clash, never overwritten), so two informers would hold
// every object of the namespace twice; one holds it once, for both. Each controller adds its own index and
// handlers before Factory starts (an index cannot be added to a running informer) and waits
// for Synced.
type MirrorNamespace struct {
	Factory  informers.SharedInformerFactory
	Services corev1.ServiceInformer
	Slices   discoveryv1.EndpointSliceInformer
}

// NewMirrorNamespace watches namespace of local, re-listing every resync (0 disables). Objects are written
// back from these caches, so they keep everything but their managedFields (package trim).
func NewMirrorNamespace(local kubernetes.Interface, namespace string, resync time.Duration) *MirrorNamespace {
	f := informers.NewSharedInformerFactoryWithOptions(local, resync, informers.WithNamespace(namespace),
		informers.WithTransform(trim.ManagedFields))
	return &MirrorNamespace{Factory: f, Services: f.Core().V1().Services(), Slices: f.Discovery().V1().EndpointSlices()}
}

// Synced are the HasSynced of both informers.
func (s *MirrorNamespace) Synced() []cache.InformerSynced {
	return []cache.InformerSynced{s.Services.Informer().HasSynced, s.Slices.Informer().HasSynced}
}
