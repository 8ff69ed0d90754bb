// Package trim holds informer transforms (cache.TransformFunc) that keep in the controllers'
// caches only what they read: every cached object costs memory for as long as it exists, and
// a remote cluster's Services and EndpointSlices are the bulk of it.
//
// Objects a controller writes back (its own mirrors, slices and sets) lose only their
// managedFields: an update without them keeps the server's, whereas an update of a copy without
// its finalizers, owner references or status would remove those. Objects only read (a remote
// cluster's) keep only the fields the controllers read.
package trim

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is the annotation kubectl apply writes: the whole object again, as JSON.
const lastApplied = corev1.LastAppliedConfigAnnotation

// ManagedFields drops the managedFields of any object: server-side apply's bookkeeping, which
// no controller here reads, often larger than the rest of the object's metadata.
func ManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// readMeta is the metadata a read-only copy keeps: identity, labels, and annotations but
// kubectl's copy of the whole object.
func readMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp,
	}
	for k, v := range m.Annotations {
		if k == lastApplied {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = make(map[string]string, len(m.Annotations))
		}
		out.Annotations[k] = v
	}
	return out
}

// RemoteService keeps of a Service only to be read its metadata (readMeta) and what a mirror
// or a global service copies of its spec, and what an exported Service's ServiceImport
// takes: its type, headless or not, IP families, ports, session affinity, traffic policies and
// whether not-ready addresses are published. Not its selector, addresses or node ports, nor its status
// (load balancer ingress) or managedFields.
func RemoteService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	spec := corev1.ServiceSpec{
		Type:                     svc.Spec.Type,
		PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		SessionAffinity:          svc.Spec.SessionAffinity,
		SessionAffinityConfig:    svc.Spec.SessionAffinityConfig,
		InternalTrafficPolicy:    svc.Spec.InternalTrafficPolicy,
		TrafficDistribution:      svc.Spec.TrafficDistribution,
		IPFamilies:               svc.Spec.IPFamilies,
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		spec.ClusterIP = corev1.ClusterIPNone
	}
	if svc.Spec.Ports != nil {
		spec.Ports = make([]corev1.ServicePort, len(svc.Spec.Ports))
		for i, p := range svc.Spec.Ports {
			spec.Ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port, TargetPort: p.TargetPort}
		}
	}
	return &corev1.Service{ObjectMeta: readMeta(svc.ObjectMeta), Spec: spec}, nil
}

// RemoteSlice keeps of an EndpointSlice only to be read its metadata (readMeta), address type,
// ports and, of each endpoint, its addresses, conditions and hostname: what a mirror copies.
// Target references, node names, zones and hints stay behind.
func RemoteSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &discoveryv1.EndpointSlice{ObjectMeta: readMeta(s.ObjectMeta), AddressType: s.AddressType, Ports: s.Ports}
	if s.Endpoints != nil {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, e := range s.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{Addresses: e.Addresses, Conditions: e.Conditions, Hostname: e.Hostname}
		}
	}
	return out, nil
}

// RemoteNode keeps of a Node only to be read its metadata (readMeta: the WireGuard annotations
// among it), pod CIDRs and addresses. A Node's status (images, conditions, capacity) is most
// of it.
func RemoteNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: readMeta(n.ObjectMeta),
		Spec:       corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, nil
}

// RemotePod keeps of a pod only its name, namespace, UID, labels, resourceVersion, whether it
// runs in its node's network (hostNetwork: its addresses are the node's, never a set's), phase
// and addresses: what a network set is made of. Annotations and managedFields, which a remote
// may fill up to the API server's limits, stay behind.
func RemotePod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: p.ResourceVersion, UID: p.UID},
		Spec:       corev1.PodSpec{HostNetwork: p.Spec.HostNetwork},
		Status:     corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}, nil
}

// Only returns a new map of the entries of m under keys, nil when it has none of them: a
// transform that keeps some labels or annotations copies them rather than filtering in place,
// as its copy of an object shares its maps with the object the informer decoded.
func Only(m map[string]string, keys []string) map[string]string {
	var kept map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if kept == nil {
				kept = make(map[string]string, len(keys))
			}
			kept[k] = v
		}
	}
	return kept
}
