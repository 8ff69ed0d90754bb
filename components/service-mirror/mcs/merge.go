package mcs

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Export is one cluster's export of a Service: its ServiceExport and the Service it names.
type Export struct {
	// Cluster is the cluster's name, as the local cluster knows it.
	Cluster string
	// Created is when the ServiceExport was created: the oldest export wins a conflict.
	Created time.Time
	// Spec says which labels and annotations the ServiceImport carries.
	Spec mcsv1beta1.ServiceExportSpec
	// Service is the exported Service, nil when the cluster has none of that name.
	Service *corev1.Service
}

// Invalid says why e cannot be exported: no Service of its name, or an ExternalName Service
// (it has no endpoints to import). The reason is empty when e is valid.
func (e Export) Invalid() (reason mcsv1beta1.ServiceExportConditionReason, message string) {
	switch {
	case e.Service == nil:
		return mcsv1beta1.ServiceExportReasonNoService, "no Service of this name in the namespace"
	case e.Service.Spec.Type == corev1.ServiceTypeExternalName:
		return mcsv1beta1.ServiceExportReasonInvalidServiceType, "an ExternalName Service cannot be exported"
	}
	return "", ""
}

// Import is what the valid exports of a Service merge into: the properties of the
// ServiceImport every cluster holds, which clusters serve it, and what they disagree on.
type Import struct {
	// From is the cluster of the oldest export, whose properties win every conflict.
	From string
	// Spec holds the merged properties; a ClusterSetIP import's IPs and IPFamilies are the
	// derived Service's, a headless one's families the oldest export's Service's.
	Spec mcsv1beta1.ServiceImportSpec
	// Labels and Annotations are the oldest export's exported ones.
	Labels, Annotations map[string]string
	// Clusters are the clusters with a valid export, in name order.
	Clusters []string
	// Conflicts are the properties the exports disagree on, as the Conflict condition's
	// reasons, in order; empty when they agree.
	Conflicts []mcsv1beta1.ServiceExportConditionReason
	// serves holds, per cluster, the names of the import's ports its Service has exactly.
	serves map[string]map[string]bool
}

// Merge applies the KEP's conflict resolution to exports: only valid exports count; each
// property is the oldest export's (the cluster name breaks a tie), except the ports, which are
// the union of every export's by name (by protocol and number for an unnamed port), a port
// that two exports define differently taken from the older. Every property that differs
// between two exports is a conflict. false when no export is valid.
func Merge(exports []Export) (Import, bool) {
	valid := slices.DeleteFunc(slices.Clone(exports), func(e Export) bool { r, _ := e.Invalid(); return r != "" })
	if len(valid) == 0 {
		return Import{}, false
	}
	slices.SortFunc(valid, func(a, b Export) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Cluster, b.Cluster)) })
	oldest := valid[0]
	imp := Import{From: oldest.Cluster, Spec: propertiesOf(oldest.Service), Labels: oldest.Spec.ExportedLabels, Annotations: oldest.Spec.ExportedAnnotations}
	conflicts := map[mcsv1beta1.ServiceExportConditionReason]bool{}
	for _, e := range valid {
		imp.Clusters = append(imp.Clusters, e.Cluster)
		for _, r := range differences(imp, e) {
			conflicts[r] = true
		}
	}
	slices.Sort(imp.Clusters)
	imp.Spec.Ports, imp.serves = unionOfPorts(valid)
	for _, e := range valid {
		if len(imp.serves[e.Cluster]) != len(imp.Spec.Ports) {
			conflicts[mcsv1beta1.ServiceExportReasonPortConflict] = true
		}
	}
	imp.Conflicts = slices.Sorted(maps.Keys(conflicts))
	return imp, true
}

// propertiesOf are the properties of an import made from svc alone, ports aside.
func propertiesOf(svc *corev1.Service) mcsv1beta1.ServiceImportSpec {
	spec := mcsv1beta1.ServiceImportSpec{
		Type:                  mcsv1beta1.ClusterSetIP,
		SessionAffinity:       cmp.Or(svc.Spec.SessionAffinity, corev1.ServiceAffinityNone),
		SessionAffinityConfig: svc.Spec.SessionAffinityConfig.DeepCopy(),
		InternalTrafficPolicy: svc.Spec.InternalTrafficPolicy,
		TrafficDistribution:   svc.Spec.TrafficDistribution,
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		// A headless import's families are the Service's: it has no address of its own.
		spec.Type = mcsv1beta1.Headless
		spec.IPFamilies = slices.Clone(svc.Spec.IPFamilies)
	}
	if spec.InternalTrafficPolicy == nil {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	return spec
}

// differences are the properties, ports aside, in which e differs from imp.
func differences(imp Import, e Export) []mcsv1beta1.ServiceExportConditionReason {
	p := propertiesOf(e.Service)
	var out []mcsv1beta1.ServiceExportConditionReason
	add := func(differ bool, r mcsv1beta1.ServiceExportConditionReason) {
		if differ {
			out = append(out, r)
		}
	}
	add(p.Type != imp.Spec.Type, mcsv1beta1.ServiceExportReasonTypeConflict)
	add(p.SessionAffinity != imp.Spec.SessionAffinity, mcsv1beta1.ServiceExportReasonSessionAffinityConflict)
	add(!equality.Semantic.DeepEqual(p.SessionAffinityConfig, imp.Spec.SessionAffinityConfig), mcsv1beta1.ServiceExportReasonSessionAffinityConfigConflict)
	add(*p.InternalTrafficPolicy != *imp.Spec.InternalTrafficPolicy, mcsv1beta1.ServiceExportReasonInternalTrafficPolicyConflict)
	add(!equality.Semantic.DeepEqual(p.TrafficDistribution, imp.Spec.TrafficDistribution), mcsv1beta1.ServiceExportReasonTrafficDistributionConflict)
	add(!maps.Equal(e.Spec.ExportedLabels, imp.Labels), mcsv1beta1.ServiceExportReasonLabelsConflict)
	add(!maps.Equal(e.Spec.ExportedAnnotations, imp.Annotations), mcsv1beta1.ServiceExportReasonAnnotationsConflict)
	return out
}

// unionOfPorts merges the ports of exports, oldest first: a port is known by its name, or by
// protocol and number when unnamed; the first export that has it defines it. It also returns,
// per cluster, the names of the merged ports its Service has exactly as merged.
func unionOfPorts(oldestFirst []Export) ([]mcsv1beta1.ServicePort, map[string]map[string]bool) {
	byID := map[string]mcsv1beta1.ServicePort{}
	for _, e := range oldestFirst {
		for _, p := range e.Service.Spec.Ports {
			if _, ok := byID[portID(p)]; !ok {
				byID[portID(p)] = importPort(p)
			}
		}
	}
	serves := map[string]map[string]bool{}
	for _, e := range oldestFirst {
		serves[e.Cluster] = map[string]bool{}
		for _, p := range e.Service.Spec.Ports {
			if equality.Semantic.DeepEqual(byID[portID(p)], importPort(p)) {
				serves[e.Cluster][p.Name] = true
			}
		}
	}
	ports := slices.SortedFunc(maps.Values(byID), func(a, b mcsv1beta1.ServicePort) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Port, b.Port))
	})
	return ports, serves
}

// portID is how ports of two clusters' Services are matched: by name, or by protocol and number
// when unnamed (a Service with one port may leave it unnamed).
func portID(p corev1.ServicePort) string {
	if p.Name != "" {
		return "name:" + p.Name
	}
	return fmt.Sprintf("%s/%d", cmp.Or(p.Protocol, corev1.ProtocolTCP), p.Port)
}

func importPort(p corev1.ServicePort) mcsv1beta1.ServicePort {
	return mcsv1beta1.ServicePort{Name: p.Name, Protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP), AppProtocol: p.AppProtocol, Port: p.Port}
}

// Serves reports whether cluster's Service has the import's port named port exactly as the
// import does: only then does the cluster's endpoints serve it.
func (imp Import) Serves(cluster, port string) bool { return imp.serves[cluster][port] }

// ConflictReason is the Conflict condition's reason: the conflicts joined by commas, as the API
// says reasons may be combined.
func (imp Import) ConflictReason() string {
	r := make([]string, len(imp.Conflicts))
	for i, c := range imp.Conflicts {
		r[i] = string(c)
	}
	return strings.Join(r, ",")
}

// KeepProperties returns imp with the properties the existing import actual has, which the
// export of cluster from gave: while that cluster cannot be read, what it defined stands.
func (imp Import) KeepProperties(from string, actual *mcsv1beta1.ServiceImport) Import {
	imp.From = from
	imp.Spec = *actual.Spec.DeepCopy()
	imp.Spec.IPs = nil
	if imp.Spec.Type == mcsv1beta1.ClusterSetIP {
		imp.Spec.IPFamilies = nil // the derived Service's
	}
	imp.Labels = maps.Clone(actual.Labels)
	for key := range Labels(Key{}) {
		delete(imp.Labels, key)
	}
	imp.Annotations = maps.Clone(actual.Annotations)
	delete(imp.Annotations, AnnotationExportFrom)
	return imp
}
