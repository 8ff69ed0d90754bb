package global

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
)

// Definition is what a cluster's Service says about a global service: what the local global
// Service is made from, and what two clusters must agree on.
type Definition struct {
	// Cluster is the cluster the Service is in.
	Cluster string
	// Spec is the spec of a selector-less copy of the Service (mirror.Spec).
	Spec corev1.ServiceSpec
	// RoutingStrategy is the value of LabelRoutingStrategy ("" when unset).
	RoutingStrategy string
}

// DefinitionOf is the definition svc of cluster gives.
func DefinitionOf(cluster string, svc *corev1.Service) Definition {
	return Definition{Cluster: cluster, Spec: mirror.Spec(svc), RoutingStrategy: svc.Labels[LabelRoutingStrategy]}
}

// LocalFirst reports whether the definition asks for local-first routing.
func (d Definition) LocalFirst() bool { return d.RoutingStrategy == LocalFirst }

// Agrees reports whether d and o define the global service alike: the same ports (by name,
// number, protocol and application protocol, in any order), headless or not, session affinity,
// publishing of not-ready addresses and routing strategy. Target ports do not count: a
// selector-less Service routes to the ports of its EndpointSlices, which each cluster gives.
func (d Definition) Agrees(o Definition) bool {
	return equality.Semantic.DeepEqual(d.comparable(), o.comparable())
}

func (d Definition) comparable() Definition {
	c := Definition{Spec: *d.Spec.DeepCopy(), RoutingStrategy: d.RoutingStrategy}
	for i := range c.Spec.Ports {
		c.Spec.Ports[i].TargetPort = intstr.IntOrString{}
	}
	slices.SortFunc(c.Spec.Ports, func(a, b corev1.ServicePort) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return c
}

// Merge is the outcome of the merge rule over the definitions the clusters give.
type Merge struct {
	// Used is the definition the global Service follows.
	Used Definition
	// Conflicts are the clusters whose definition differs from Used, in name order.
	Conflicts []string
}

// Decide applies the merge rule: the definition of the cluster whose name sorts first is used
// as a whole, and every other cluster whose definition differs is a conflict. Cluster names
// are the same in every cluster of the mesh, so every cluster decides alike, and on every
// restart. defs must not be empty.
func Decide(defs []Definition) Merge {
	sorted := slices.SortedFunc(slices.Values(defs), func(a, b Definition) int { return cmp.Compare(a.Cluster, b.Cluster) })
	m := Merge{Used: sorted[0]}
	for _, d := range sorted[1:] {
		if !d.Agrees(m.Used) {
			m.Conflicts = append(m.Conflicts, d.Cluster)
		}
	}
	return m
}
