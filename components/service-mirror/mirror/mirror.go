// Package mirror computes, without any I/O, the local objects that mirror a remote Service:
// their names, their desired state, and whether an existing object needs to change.
package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/names"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Separator sits between the source namespace and name in a mirror's name. It is fixed: the
// CoreDNS rewrite that serves <name>.<namespace>.svc.cluster.<remote> relies on it.
const Separator = "73736d"

// Label keys on every mirror object, naming the remote Service it mirrors.
const (
	LabelCluster   = "mirror.semaphore.uw.io/cluster"
	LabelNamespace = "mirror.semaphore.uw.io/namespace"
	LabelName      = "mirror.semaphore.uw.io/name"
)

// AnnotationSourceSlice on a mirrored EndpointSlice holds the name of the remote slice it copies.
const AnnotationSourceSlice = "mirror.semaphore.uw.io/source-slice"

// SliceManager is the endpointslice.kubernetes.io/managed-by value of mirrored slices, which
// keeps Kubernetes' own EndpointSlice controllers away from them.
const SliceManager = "semaphore-service-mirror.semaphore.uw.io"

// Source identifies a remote Service: the key of everything the controller does.
type Source = ownership.Source

// sourceKeys are the labels under which a mirror object records its source.
var sourceKeys = ownership.SourceKeys{Component: ownership.ServiceMirror, Cluster: LabelCluster, Namespace: LabelNamespace, Name: LabelName}

// SourceOf reads the source labels of a mirror object.
func SourceOf(l map[string]string) (Source, bool) { return sourceKeys.SourceOf(l) }

// Labels are the labels of every object mirroring s.
func Labels(s Source) map[string]string { return sourceKeys.Labels(s) }

// ServiceName is the name of the mirror of s: <cluster>-<namespace>-73736d-<name>, shortened
// deterministically when it would exceed the 63 characters a Service name may have.
func ServiceName(s Source) string {
	return names.Shorten(fmt.Sprintf("%s-%s-%s-%s", s.Cluster, s.Namespace, Separator, s.Name), names.MaxLabel)
}

// SliceName is the name of the mirror of the remote EndpointSlice remoteSlice of mirror Service
// service: the service name and a hash of the remote slice's name, so each remote slice maps
// to exactly one local slice and the mapping survives restarts.
func SliceName(service, remoteSlice string) string {
	sum := sha256.Sum256([]byte(remoteSlice))
	suffix := hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(names.Shorten(service, names.MaxLabel-len(suffix)-1), "-") + "-" + suffix
}

// Service returns the desired mirror in namespace of remote Service svc from source s: a
// selector-less ClusterIP Service (headless when the source is) with the same ports and no
// node ports.
func Service(s Source, namespace string, svc *corev1.Service) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(s), Namespace: namespace, Labels: Labels(s)},
		Spec:       Spec(svc),
	}
}

// Spec is the spec of a selector-less copy of svc: ClusterIP (headless when svc is), the same
// ports and session affinity, no node ports.
func Spec(svc *corev1.Service) corev1.ServiceSpec {
	spec := corev1.ServiceSpec{
		Type:                     corev1.ServiceTypeClusterIP,
		PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		SessionAffinity:          svc.Spec.SessionAffinity,
		SessionAffinityConfig:    svc.Spec.SessionAffinityConfig.DeepCopy(),
		// Every copy prefers dual-stack: on a dual-stack local cluster it then serves
		// whichever families the remote endpoints have (an IPv6-only source included),
		// and on a single-stack one it is created single-stack rather than rejected.
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack),
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		spec.ClusterIP = corev1.ClusterIPNone
	}
	for _, p := range svc.Spec.Ports {
		spec.Ports = append(spec.Ports, corev1.ServicePort{
			Name:        p.Name,
			Protocol:    p.Protocol,
			AppProtocol: p.AppProtocol,
			Port:        p.Port,
			TargetPort:  p.TargetPort,
		})
	}
	return spec
}

// EndpointSlices returns the desired mirrors in namespace of the remote slices of source s,
// one per remote slice.
func EndpointSlices(s Source, namespace string, remote []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	service := ServiceName(s)
	out := make([]*discoveryv1.EndpointSlice, 0, len(remote))
	for _, r := range remote {
		l := Labels(s)
		l[discoveryv1.LabelServiceName] = service
		out = append(out, CopySlice(r, metav1.ObjectMeta{Name: SliceName(service, r.Name), Namespace: namespace, Labels: l}))
	}
	return out
}

// CopySlice returns a copy of slice r for a local Service, with meta and the labels and
// annotation every copy has (managed by SliceManager, the source slice's name). Remote-only
// details (node names, target references, zones, hints) are left out: they name things that
// do not exist locally.
func CopySlice(r *discoveryv1.EndpointSlice, meta metav1.ObjectMeta) *discoveryv1.EndpointSlice {
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[discoveryv1.LabelManagedBy] = SliceManager
	meta.Annotations = map[string]string{AnnotationSourceSlice: r.Name}
	m := &discoveryv1.EndpointSlice{
		ObjectMeta:  meta,
		AddressType: r.AddressType,
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(r.Endpoints)),
		Ports:       make([]discoveryv1.EndpointPort, 0, len(r.Ports)),
	}
	for _, e := range r.Endpoints {
		m.Endpoints = append(m.Endpoints, discoveryv1.Endpoint{
			Addresses:  append([]string(nil), e.Addresses...),
			Conditions: *e.Conditions.DeepCopy(),
			Hostname:   copyPtr(e.Hostname),
		})
	}
	for _, p := range r.Ports {
		m.Ports = append(m.Ports, *p.DeepCopy())
	}
	return m
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

// Change says how an existing object must change to match the desired one.
type Change int

const (
	// NoChange means the object matches; nothing is written.
	NoChange Change = iota
	// Update means an update with the returned object makes it match.
	Update
	// Recreate means an immutable field differs (a Service's headlessness, a slice's address
	// type); the object must be deleted and created again.
	Recreate
)

// UpdateService compares the desired mirror with the actual one and returns the object to
// write: a copy of actual with only the fields the mirror owns set from desired, so fields the
// API server defaults or other parties add are kept and never cause a write by themselves.
func UpdateService(desired, actual *corev1.Service) (Change, *corev1.Service) {
	if (desired.Spec.ClusterIP == corev1.ClusterIPNone) != (actual.Spec.ClusterIP == corev1.ClusterIPNone) {
		return Recreate, nil
	}
	next := actual.DeepCopy()
	next.Labels = mergeLabels(next.Labels, desired.Labels)
	// An adopted Service of the original tool loses its marks (ours never carry them).
	adopt.Strip(next)
	next.Spec.Type = desired.Spec.Type
	next.Spec.Selector = nil
	next.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
	if desired.Spec.SessionAffinity != "" {
		next.Spec.SessionAffinity = desired.Spec.SessionAffinity
		next.Spec.SessionAffinityConfig = desired.Spec.SessionAffinityConfig.DeepCopy()
	}
	next.Spec.IPFamilyPolicy = desired.Spec.IPFamilyPolicy
	next.Spec.Ports = mergePorts(actual.Spec.Ports, desired.Spec.Ports)
	if equality.Semantic.DeepEqual(next, actual) {
		return NoChange, nil
	}
	return Update, next
}

// mergePorts returns the desired ports; a desired port that leaves targetPort or protocol
// unset takes the value the API server defaulted on the actual port of the same number.
func mergePorts(actual, desired []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, 0, len(desired))
	for _, d := range desired {
		for _, a := range actual {
			if a.Port == d.Port && a.Name == d.Name {
				if d.Protocol == "" {
					d.Protocol = a.Protocol
				}
				if d.TargetPort.IntVal == 0 && d.TargetPort.StrVal == "" {
					d.TargetPort = a.TargetPort
				}
			}
		}
		d.NodePort = 0
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// UpdateEndpointSlice compares the desired mirror slice with the actual one and returns the
// object to write, as UpdateService does.
func UpdateEndpointSlice(desired, actual *discoveryv1.EndpointSlice) (Change, *discoveryv1.EndpointSlice) {
	if desired.AddressType != actual.AddressType {
		return Recreate, nil
	}
	next := actual.DeepCopy()
	next.Labels = mergeLabels(next.Labels, desired.Labels)
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	for k, v := range desired.Annotations {
		next.Annotations[k] = v
	}
	next.Endpoints = desired.Endpoints
	next.Ports = desired.Ports
	if equality.Semantic.DeepEqual(normalizeSlice(next), normalizeSlice(actual)) {
		return NoChange, nil
	}
	return Update, next
}

// normalizeSlice treats empty and nil lists alike: the API server returns nil for both.
func normalizeSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	s = s.DeepCopy()
	if len(s.Endpoints) == 0 {
		s.Endpoints = nil
	}
	if len(s.Ports) == 0 {
		s.Ports = nil
	}
	return s
}

func mergeLabels(actual, desired map[string]string) map[string]string {
	out := make(map[string]string, len(actual)+len(desired))
	for k, v := range actual {
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	return out
}

// Admit takes out of slices, in place, every endpoint address guard refuses (an address the
// remote may not publish, or no IP address at all: an FQDN slice's), and every endpoint left
// without an address; it returns what it refused, each with its source slice. The slices must
// be the caller's own copies (EndpointSlices, CopySlice).
func Admit(slices []*discoveryv1.EndpointSlice, guard addrguard.Remote) []addrguard.Refused {
	var refused []addrguard.Refused
	for _, s := range slices {
		kept := s.Endpoints[:0]
		for _, e := range s.Endpoints {
			addrs := e.Addresses[:0]
			for _, text := range e.Addresses {
				a, _ := netip.ParseAddr(text) // the zero Addr, refused, when it is none
				var r *addrguard.Refusal
				if !errors.As(guard.Addr(a), &r) {
					addrs = append(addrs, text)
					continue
				}
				refused = append(refused, addrguard.Refused{Source: s.Annotations[AnnotationSourceSlice], Addr: text, Reason: r.Reason})
			}
			if len(addrs) > 0 {
				e.Addresses = addrs
				kept = append(kept, e)
			}
		}
		s.Endpoints = kept
	}
	return refused
}
