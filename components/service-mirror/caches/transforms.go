package caches

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// The informer transforms (cache.TransformFunc) of the Services and EndpointSlices the service
// mirror reads from a cluster, remote or local, and never writes: on top of what package trim
// leaves out of them, they keep only the labels the service mirror reads and no annotation. A
// cluster may put up to 256 KiB of annotations, and any number of labels, on every object it
// publishes; none of it is copied anywhere, so none of it is cached, and a remote that
// publishes huge metadata costs the controller's memory nothing.

// ServiceLabels are the labels of a Service the service mirror reads: whether it is ours (ours
// are never the source of a global service), and the routing strategy of a global service.
// The selectors are applied by the API server, which lists and watches only what they select.
var ServiceLabels = []string{ownership.ManagedBy, global.LabelRoutingStrategy}

// SliceLabels are the labels of an EndpointSlice the service mirror reads: the Service it
// belongs to.
var SliceLabels = []string{discoveryv1.LabelServiceName}

// TrimService is trim.RemoteService keeping only ServiceLabels and no annotation.
func TrimService(obj any) (any, error) {
	out, err := trim.RemoteService(obj)
	if svc, ok := out.(*corev1.Service); ok {
		only(&svc.ObjectMeta, ServiceLabels)
	}
	return out, err
}

// TrimSlice is trim.RemoteSlice keeping only SliceLabels and no annotation.
func TrimSlice(obj any) (any, error) {
	out, err := trim.RemoteSlice(obj)
	if s, ok := out.(*discoveryv1.EndpointSlice); ok {
		only(&s.ObjectMeta, SliceLabels)
	}
	return out, err
}

// only keeps of m's labels those of keys (package trim's Only), and drops its annotations.
func only(m *metav1.ObjectMeta, keys []string) {
	m.Labels, m.Annotations = trim.Only(m.Labels, keys), nil
}
