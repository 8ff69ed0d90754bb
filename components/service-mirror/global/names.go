// Package global computes, without any I/O, the local objects of a global service: a Service
// with the same namespace and name in several clusters, served locally by one selector-less
// Service whose EndpointSlices copy those of every cluster that has it, the local one included.
// It holds their names and labels, the rule that merges the clusters' definitions, and the
// zone hints of local-first routing.
package global

import (
	"fmt"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/names"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Label keys and values users put on the Services of every cluster.
const (
	// LabelGlobalService selects a Service as a global service (the default selector is
	// LabelGlobalService=true).
	LabelGlobalService = "mirror.semaphore.uw.io/global-service"
	// LabelRoutingStrategy set to LocalFirst sends traffic to the local cluster's endpoints
	// while any is ready, and to the other clusters' only when none is.
	LabelRoutingStrategy = "mirror.semaphore.uw.io/global-service-routing-strategy"
	LocalFirst           = "local-first"
)

// DefaultSelector is the default label selector of global services.
const DefaultSelector = LabelGlobalService + "=true"

// Label keys on every global object we make: the namespace and name of the global service, and
// on EndpointSlices the cluster whose slice it copies. They differ from the mirrors' keys, so a
// global object is never taken for a mirror and the other way round.
const (
	LabelNamespace = "mirror.semaphore.uw.io/global-namespace"
	LabelName      = "mirror.semaphore.uw.io/global-name"
	LabelCluster   = "mirror.semaphore.uw.io/global-cluster"
)

// AnnotationDefinitionFrom on a global Service names the cluster whose definition it follows.
const AnnotationDefinitionFrom = "mirror.semaphore.uw.io/global-definition-from"

// prefix starts the name of every global Service; the CoreDNS rewrite of
// <name>.<namespace>.svc.cluster.global relies on it.
const prefix = "gl"

// Key identifies a global service: the namespace and name it has in every cluster.
type Key struct {
	Namespace, Name string
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// ServiceName is the name of the local Service of global service k:
// gl-<namespace>-73736d-<name>, shortened as mirror names are when it would exceed 63
// characters.
func ServiceName(k Key) string {
	return names.Shorten(fmt.Sprintf("%s-%s-%s-%s", prefix, k.Namespace, mirror.Separator, k.Name), names.MaxLabel)
}

// Labels are the labels of the global Service of k.
func Labels(k Key) map[string]string {
	return map[string]string{ownership.ManagedBy: ownership.ServiceMirror, LabelNamespace: k.Namespace, LabelName: k.Name}
}

// SliceLabels are the labels of a global EndpointSlice of k copied from a slice of cluster.
func SliceLabels(k Key, cluster string) map[string]string {
	l := Labels(k)
	l[LabelCluster] = cluster
	return l
}

// KeyOf reads the global service a local object of ours belongs to from its labels; false
// when it is no global object of ours.
func KeyOf(l map[string]string) (Key, bool) {
	k := Key{Namespace: l[LabelNamespace], Name: l[LabelName]}
	return k, ownership.IsManagedBy(l, ownership.ServiceMirror) && k.Namespace != "" && k.Name != ""
}
