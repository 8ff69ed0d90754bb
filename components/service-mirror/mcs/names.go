// Package mcs computes, without any I/O, what the Multi-Cluster Services API (KEP-1645) asks of
// every cluster of a clusterset: whether a ServiceExport is valid, the ServiceImport merged from
// every cluster's export of a Service, with the conflicts the merge found, the local derived
// Service that gives a ClusterSetIP import its address, and the EndpointSlices that copy each
// exporting cluster's endpoints into the Service's own namespace.
package mcs

import (
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/names"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Key identifies a multi-cluster service: the namespace and name of the exported Service, the
// same in every cluster of the clusterset (namespace sameness).
type Key struct {
	Namespace, Name string
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// LabelNamespace on every object we make for a multi-cluster service names its namespace: the
// controller finds the service of an object from its labels alone. The name is the standard
// multicluster.kubernetes.io/service-name label.
const LabelNamespace = "mirror.semaphore.uw.io/mcs-namespace"

// LabelCluster on every imported slice names the cluster it is copied from, by its Semaphore name:
// the controller tells whose a slice is by it, whatever ID the standard source-cluster label
// carries (ClusterIDProperty).
const LabelCluster = "mirror.semaphore.uw.io/mcs-cluster"

// AnnotationExportFrom on a ServiceImport names the cluster whose export its properties follow
// (the oldest), so that they are kept while that cluster cannot be read.
const AnnotationExportFrom = "mirror.semaphore.uw.io/mcs-export-from"

// derivedPrefix starts the name of every derived Service.
const derivedPrefix = "semaphore-mcs-"

// DerivedServiceName is the name of the local Service that gives the ClusterSetIP import of k
// its address and kube-proxy its rules: semaphore-mcs-<name>, in k's namespace, shortened when
// it would exceed 63 characters.
func DerivedServiceName(k Key) string {
	return names.Shorten(derivedPrefix+k.Name, names.MaxLabel)
}

// Labels are the labels of every object we make for k.
func Labels(k Key) map[string]string {
	return map[string]string{ownership.ManagedBy: ownership.ServiceMirror, LabelNamespace: k.Namespace, mcsv1beta1.LabelServiceName: k.Name}
}

// KeyOf reads the multi-cluster service a local object of ours belongs to from its labels; false
// when it is no object of ours for one.
func KeyOf(l map[string]string) (Key, bool) {
	k := Key{Namespace: l[LabelNamespace], Name: l[mcsv1beta1.LabelServiceName]}
	return k, ownership.IsManagedBy(l, ownership.ServiceMirror) && k.Namespace != "" && k.Name != ""
}
