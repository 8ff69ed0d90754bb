package trimmed_test

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

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/service-mirror/trimmed"
	"github.com/kube-semaphore/semaphore/internal/ownership"
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

func transform(t *testing.T, f cache.TransformFunc, obj any) any {
	t.Helper()
	out, err := f(obj)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out, again); diff != "" {
		t.Errorf("not idempotent (-once +twice):\n%s", diff)
	}
	return out
}

// A Service trimmed keeps exactly the labels the service mirror reads and no annotation, and
// makes the same mirror and the same global definition as in full; the object the informer
// decoded is left as it was.
func TestServiceKeepsOnlyTheLabelsTheServiceMirrorReads(t *testing.T) {
	read := map[string]string{ownership.ManagedBy: "someone", global.LabelRoutingStrategy: global.LocalFirst}
	full := &corev1.Service{
		ObjectMeta: noisy("web", read),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	before := full.DeepCopy()
	got := transform(t, trimmed.Service, full).(*corev1.Service)
	if diff := cmp.Diff(read, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("annotations %d, managedFields %v: want none", len(got.Annotations), got.ManagedFields)
	}
	src := mirror.Source{Cluster: "aws", Namespace: "app", Name: "web"}
	if diff := cmp.Diff(mirror.Service(src, "semaphore", full), mirror.Service(src, "semaphore", got)); diff != "" {
		t.Errorf("mirror differs (-full +trimmed):\n%s", diff)
	}
	if diff := cmp.Diff(global.DefinitionOf("aws", full), global.DefinitionOf("aws", got)); diff != "" {
		t.Errorf("global definition differs (-full +trimmed):\n%s", diff)
	}
	if diff := cmp.Diff(before, full); diff != "" {
		t.Errorf("the decoded object changed (-before +after):\n%s", diff)
	}
	plain := transform(t, trimmed.Service, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"a": "b"}}}).(*corev1.Service)
	if plain.Labels != nil {
		t.Errorf("labels %v, want none", plain.Labels)
	}
}

// An EndpointSlice trimmed keeps only its Service's name of its labels, no annotation, and
// makes the same mirror slice as in full.
func TestSliceKeepsOnlyItsServiceName(t *testing.T) {
	full := &discoveryv1.EndpointSlice{
		ObjectMeta:  noisy("web-abc", map[string]string{discoveryv1.LabelServiceName: "web"}),
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.18.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	got := transform(t, trimmed.Slice, full).(*discoveryv1.EndpointSlice)
	if diff := cmp.Diff(map[string]string{discoveryv1.LabelServiceName: "web"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Annotations != nil {
		t.Errorf("%d annotations, want none", len(got.Annotations))
	}
	to := metav1.ObjectMeta{Name: "m", Namespace: "semaphore"}
	if diff := cmp.Diff(mirror.CopySlice(full, to), mirror.CopySlice(got, to)); diff != "" {
		t.Errorf("mirror slice differs (-full +trimmed):\n%s", diff)
	}
	if idx, _ := mirror.IndexByServiceName(got); len(idx) != 1 || idx[0] != "app/web" {
		t.Errorf("indexed under %v, want app/web", idx)
	}
}

// Anything else an informer hands over (a tombstone) passes unchanged.
func TestOtherObjectsPass(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "app/web", Obj: &corev1.Service{ObjectMeta: noisy("web", nil)}}
	for _, f := range []cache.TransformFunc{trimmed.Service, trimmed.Slice} {
		if out, err := f(tomb); err != nil || !cmp.Equal(out, tomb) {
			t.Errorf("a tombstone changed: %v", err)
		}
	}
}
