package mcs

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
)

// ServiceImport returns the desired ServiceImport of k: imp's properties, and for a ClusterSetIP
// import the addresses and families of its derived Service (none until it has them); a headless
// one has no address, and the families of the Service. Its labels
// and annotations are the exported ones with ours added.
func ServiceImport(k Key, imp Import, derived *corev1.Service) *mcsv1beta1.ServiceImport {
	spec := *imp.Spec.DeepCopy()
	if spec.Type == mcsv1beta1.ClusterSetIP {
		spec.IPs, spec.IPFamilies = nil, nil
		if derived != nil {
			spec.IPs = append([]string(nil), derived.Spec.ClusterIPs...)
			spec.IPFamilies = append([]corev1.IPFamily(nil), derived.Spec.IPFamilies...)
		}
	}
	labels := maps.Clone(imp.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(k))
	annotations := maps.Clone(imp.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationExportFrom] = imp.From
	return &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace, Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

// UpdateServiceImport compares the desired ServiceImport with the actual one and returns the
// object to write: labels, annotations and spec are exactly the desired ones (an exported label
// no longer exported goes), the rest of actual is kept.
func UpdateServiceImport(desired, actual *mcsv1beta1.ServiceImport) (mirror.Change, *mcsv1beta1.ServiceImport) {
	if equality.Semantic.DeepEqual(desired.Spec, actual.Spec) && maps.Equal(desired.Labels, actual.Labels) && maps.Equal(desired.Annotations, actual.Annotations) {
		return mirror.NoChange, nil
	}
	next := actual.DeepCopy()
	next.Labels, next.Annotations, next.Spec = desired.Labels, desired.Annotations, *desired.Spec.DeepCopy()
	return mirror.Update, next
}

// DerivedService returns the desired derived Service of the ClusterSetIP import of k: a
// selector-less ClusterIP Service in k's namespace with imp's ports and properties, whose
// ClusterIPs become the import's IPs and whose EndpointSlices are the imported ones.
func DerivedService(k Key, imp Import) *corev1.Service {
	spec := corev1.ServiceSpec{
		Type:                  corev1.ServiceTypeClusterIP,
		SessionAffinity:       imp.Spec.SessionAffinity,
		SessionAffinityConfig: imp.Spec.SessionAffinityConfig.DeepCopy(),
		InternalTrafficPolicy: imp.Spec.InternalTrafficPolicy,
		TrafficDistribution:   imp.Spec.TrafficDistribution,
		// As a mirror: every family the cluster has, so the import has an address per family.
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack),
	}
	for _, p := range imp.Spec.Ports {
		spec.Ports = append(spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port})
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DerivedServiceName(k), Namespace: k.Namespace, Labels: Labels(k)},
		Spec:       spec,
	}
}

// UpdateDerivedService compares the desired derived Service with the actual one and returns the
// object to write, as mirror.UpdateService does, with the traffic policies too.
func UpdateDerivedService(desired, actual *corev1.Service) (mirror.Change, *corev1.Service) {
	withPolicies := actual.DeepCopy()
	withPolicies.Spec.InternalTrafficPolicy = desired.Spec.InternalTrafficPolicy
	withPolicies.Spec.TrafficDistribution = desired.Spec.TrafficDistribution
	change, next := mirror.UpdateService(desired, withPolicies)
	if change == mirror.NoChange && !equality.Semantic.DeepEqual(withPolicies.Spec, actual.Spec) {
		return mirror.Update, withPolicies
	}
	return change, next
}

// EndpointSlices returns the imported slices of k in its namespace copied from the slices of
// cluster, one per source slice: labelled with the service and the source cluster (the cluster's
// id) as the API says, with the cluster's name (LabelCluster), and with the derived Service's
// name for kube-proxy; of the source's ports only those the
// cluster serves for the import (Import.Serves), so that a port two clusters define differently
// reaches only the cluster whose definition the import has.
func EndpointSlices(k Key, imp Import, cluster, id string, source []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	derived := DerivedServiceName(k)
	out := make([]*discoveryv1.EndpointSlice, 0, len(source))
	for _, s := range source {
		l := Labels(k)
		l[mcsv1beta1.LabelSourceCluster] = id
		l[LabelCluster] = cluster
		l[discoveryv1.LabelServiceName] = derived
		c := mirror.CopySlice(s, metav1.ObjectMeta{Name: SliceName(k, cluster, s.Name), Namespace: k.Namespace, Labels: l})
		c.Ports = servedPorts(c.Ports, imp, cluster)
		out = append(out, c)
	}
	return out
}

// servedPorts keeps, in place, the ports of a copy of cluster's slice that cluster serves for imp.
func servedPorts(ports []discoveryv1.EndpointPort, imp Import, cluster string) []discoveryv1.EndpointPort {
	kept := ports[:0]
	for _, p := range ports {
		if imp.Serves(cluster, ptr.Deref(p.Name, "")) {
			kept = append(kept, p)
		}
	}
	return kept
}

// SliceName is the name of the imported slice of k copied from slice of cluster: stable across
// restarts, distinct for equally named slices of two clusters.
func SliceName(k Key, cluster, slice string) string {
	return mirror.SliceName(DerivedServiceName(k), cluster+"/"+slice)
}
