package global

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/names"
)

// Service returns the desired global Service of k in namespace, made from the definition used.
// It records that definition's cluster and routing strategy in annotations, so that the
// definition is known, and kept, while its cluster cannot be read.
func Service(k Key, namespace string, used Definition) *corev1.Service {
	annotations := map[string]string{AnnotationDefinitionFrom: used.Cluster}
	if used.RoutingStrategy != "" {
		annotations[annotationRoutingStrategy] = used.RoutingStrategy
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(k), Namespace: namespace, Labels: Labels(k), Annotations: annotations},
		Spec:       *used.Spec.DeepCopy(),
	}
}

// annotationRoutingStrategy on a global Service is the routing strategy of the definition used.
const annotationRoutingStrategy = LabelRoutingStrategy

// DefinitionKept is the definition an existing global Service follows: what Service made it.
func DefinitionKept(svc *corev1.Service) Definition {
	return Definition{
		Cluster:         svc.Annotations[AnnotationDefinitionFrom],
		Spec:            mirror.Spec(svc),
		RoutingStrategy: svc.Annotations[annotationRoutingStrategy],
	}
}

// UpdateService compares the desired global Service with the actual one and returns the object
// to write, as mirror.UpdateService does; our annotations are set, or removed, as desired.
func UpdateService(desired, actual *corev1.Service) (mirror.Change, *corev1.Service) {
	withOurs := actual.DeepCopy()
	for _, key := range []string{AnnotationDefinitionFrom, annotationRoutingStrategy} {
		if v, ok := desired.Annotations[key]; ok {
			if withOurs.Annotations == nil {
				withOurs.Annotations = map[string]string{}
			}
			withOurs.Annotations[key] = v
		} else {
			delete(withOurs.Annotations, key)
		}
	}
	change, next := mirror.UpdateService(desired, withOurs)
	if change == mirror.NoChange && !maps.Equal(withOurs.Annotations, actual.Annotations) {
		return mirror.Update, withOurs
	}
	return change, next
}

// Hints say which zones kube-proxy routes an endpoint from, for local-first routing: the
// local cluster's endpoints for every local zone, the others' for a zone that is none of
// them. While any local endpoint is ready, kube-proxy on a node of a local zone uses only the
// endpoints hinted for its zone, the local ones; when none is, no ready endpoint is hinted for
// its zone and it falls back to all of them.
type Hints struct {
	// LocalZones are the local cluster's zones, sorted.
	LocalZones []string
}

// MaxZones is the most zone hints an endpoint may carry (EndpointSlice validation).
const MaxZones = 8

// Usable reports whether local-first routing can be expressed: the local Nodes have zones,
// and no more than an endpoint's hints can hold.
func (h Hints) Usable() bool { return len(h.LocalZones) > 0 && len(h.LocalZones) <= MaxZones }

// For returns the hints of an endpoint from cluster, local or not.
func (h Hints) For(cluster string, local bool) *discoveryv1.EndpointHints {
	if local {
		zones := make([]discoveryv1.ForZone, 0, len(h.LocalZones))
		for _, z := range h.LocalZones {
			zones = append(zones, discoveryv1.ForZone{Name: z})
		}
		return &discoveryv1.EndpointHints{ForZones: zones}
	}
	return &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: h.remoteZone(cluster)}}}
}

// remoteZone is the zone the endpoints of remote cluster are hinted for: a name of our own,
// made different from every local zone (a zone name is a label value).
func (h Hints) remoteZone(cluster string) string {
	zone := names.Shorten("semaphore-remote-"+cluster, names.MaxLabel)
	for slices.Contains(h.LocalZones, zone) {
		zone = names.Shorten(zone+"-remote", names.MaxLabel)
	}
	return zone
}

// EndpointSlices returns the desired global slices of k in namespace copied from the slices
// of cluster, one per source slice, with hints when hints is not nil.
func EndpointSlices(k Key, namespace, cluster string, source []*discoveryv1.EndpointSlice, hints *discoveryv1.EndpointHints) []*discoveryv1.EndpointSlice {
	service := ServiceName(k)
	out := make([]*discoveryv1.EndpointSlice, 0, len(source))
	for _, s := range source {
		l := SliceLabels(k, cluster)
		l[discoveryv1.LabelServiceName] = service
		c := mirror.CopySlice(s, metav1.ObjectMeta{Name: SliceName(k, cluster, s.Name), Namespace: namespace, Labels: l})
		for i := range c.Endpoints {
			c.Endpoints[i].Hints = hints.DeepCopy()
		}
		out = append(out, c)
	}
	return out
}

// SliceName is the name of the global slice of k copied from slice of cluster: stable across
// restarts, and distinct for equally named slices of two clusters.
func SliceName(k Key, cluster, slice string) string {
	return mirror.SliceName(ServiceName(k), cluster+"/"+slice)
}
