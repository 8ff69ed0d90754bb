package caches_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/trim"
	"github.com/kube-semaphore/semaphore/internal/trim/trimtest"
)

// noisy is metadata as a remote may publish it: labels and annotations no one reads, a big one
// among them, and the labels the service mirror does read.
func noisy(name string, read map[string]string) metav1.ObjectMeta {
	l := map[string]string{"team": "payments", "mirror.semaphore.uw.io/mirror-service": "true"}
	maps.Copy(l, read)
	return metav1.ObjectMeta{
		Name: name, Namespace: "app", UID: "uid-1", ResourceVersion: "7", Labels: l,
		Annotations:   map[string]string{"huge": strings.Repeat("x", 200<<10), corev1.LastAppliedConfigAnnotation: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
}

// A remote Service trimmed, by trim.RemoteService alone or followed by caches.TrimService as the
// service mirror's informers do, makes the same mirror and the same global definition as in
// full, headless or not.
func TestTrimmedServiceMakesTheSameMirrorAndGlobalDefinition(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: noisy("web", map[string]string{global.LabelRoutingStrategy: global.LocalFirst}),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.5", SessionAffinity: corev1.ServiceAffinityClientIP,
			Selector: map[string]string{"app": "web"}, ClusterIPs: []string{"10.0.0.5"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080, Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http")}},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.1"}}}},
	}
	headless := svc.DeepCopy()
	headless.Spec.Type, headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone, true
	src := mirror.Source{Cluster: "aws", Namespace: "app", Name: "web"}
	for _, full := range []*corev1.Service{svc, headless} {
		for name, f := range map[string]cache.TransformFunc{"trim.RemoteService": trim.RemoteService, "caches.TrimService": caches.TrimService} {
			got := trimtest.Apply(t, f, full.DeepCopy()).(*corev1.Service)
			if diff := cmp.Diff(mirror.Service(src, "semaphore", full), mirror.Service(src, "semaphore", got)); diff != "" {
				t.Errorf("%s: mirror of the trimmed Service differs (-full +trimmed):\n%s", name, diff)
			}
			if diff := cmp.Diff(global.DefinitionOf("aws", full), global.DefinitionOf("aws", got)); diff != "" {
				t.Errorf("%s: global definition differs (-full +trimmed):\n%s", name, diff)
			}
		}
	}
}

// A Service trimmed keeps exactly the labels the service mirror reads and no annotation; the
// object the informer decoded is left as it was.
func TestServiceKeepsOnlyTheLabelsTheServiceMirrorReads(t *testing.T) {
	read := map[string]string{ownership.ManagedBy: "someone", global.LabelRoutingStrategy: global.LocalFirst}
	full := &corev1.Service{ObjectMeta: noisy("web", read), Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	before := full.DeepCopy()
	got := trimtest.Apply(t, caches.TrimService, full).(*corev1.Service)
	if diff := cmp.Diff(read, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("annotations %d, managedFields %v: want none", len(got.Annotations), got.ManagedFields)
	}
	if diff := cmp.Diff(before, full); diff != "" {
		t.Errorf("the decoded object changed (-before +after):\n%s", diff)
	}
	plain := trimtest.Apply(t, caches.TrimService, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"a": "b"}}}).(*corev1.Service)
	if plain.Labels != nil {
		t.Errorf("labels %v, want none", plain.Labels)
	}
}

// A remote EndpointSlice trimmed, by trim.RemoteSlice alone or followed by caches.TrimSlice, makes
// the same mirror slice as in full.
func TestTrimmedSliceMakesTheSameMirrorSlice(t *testing.T) {
	full := &discoveryv1.EndpointSlice{
		ObjectMeta:  noisy("web-abc", map[string]string{discoveryv1.LabelServiceName: "web"}),
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"198.18.1.5"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)},
			Hostname:   ptr.To("web-0"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: "web-0"},
			NodeName:   ptr.To("node-1"),
			Zone:       ptr.To("a"),
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}}},
		}},
	}
	to := metav1.ObjectMeta{Name: "m", Namespace: "semaphore"}
	for name, f := range map[string]cache.TransformFunc{"trim.RemoteSlice": trim.RemoteSlice, "caches.TrimSlice": caches.TrimSlice} {
		got := trimtest.Apply(t, f, full.DeepCopy()).(*discoveryv1.EndpointSlice)
		if diff := cmp.Diff(mirror.CopySlice(full, to), mirror.CopySlice(got, to)); diff != "" {
			t.Errorf("%s: mirror slice differs (-full +trimmed):\n%s", name, diff)
		}
	}
}

// An EndpointSlice trimmed keeps only its Service's name of its labels and no annotation, and
// is indexed under its Service.
func TestSliceKeepsOnlyItsServiceName(t *testing.T) {
	full := &discoveryv1.EndpointSlice{ObjectMeta: noisy("web-abc", map[string]string{discoveryv1.LabelServiceName: "web"})}
	got := trimtest.Apply(t, caches.TrimSlice, full).(*discoveryv1.EndpointSlice)
	if diff := cmp.Diff(map[string]string{discoveryv1.LabelServiceName: "web"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Annotations != nil {
		t.Errorf("%d annotations, want none", len(got.Annotations))
	}
	if idx, _ := mirror.IndexByServiceName(got); len(idx) != 1 || idx[0] != "app/web" {
		t.Errorf("indexed under %v, want app/web", idx)
	}
}

// Anything else an informer hands over (a tombstone) passes unchanged.
func TestOtherObjectsPass(t *testing.T) {
	trimtest.PassTombstone(t, &corev1.Service{ObjectMeta: noisy("web", nil)}, caches.TrimService, caches.TrimSlice)
}
