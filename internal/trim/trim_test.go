package trim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/trim"
	"github.com/kube-semaphore/semaphore/internal/trim/trimtest"
)

// Everything that fills a real object and no controller reads.
var noise = metav1.ObjectMeta{
	ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	OwnerReferences: []metav1.OwnerReference{{Name: "owner"}},
	Annotations:     map[string]string{corev1.LastAppliedConfigAnnotation: `{"big":"json"}`, "keep": "me"},
}

func meta(name string) metav1.ObjectMeta {
	m := *noise.DeepCopy()
	m.Name, m.Namespace, m.UID, m.ResourceVersion = name, "app", "uid-1", "42"
	m.Labels = map[string]string{mirror.LabelName: "x", global.LabelRoutingStrategy: global.LocalFirst}
	return m
}

// A remote Service trimmed holds no managedFields, status, selector, addresses, node ports or
// kubectl's copy of itself. (That it makes the same mirror and the same global definition as in
// full is the service mirror's test: package trimmed.)
func TestRemoteServiceKeepsOnlyWhatIsRead(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: meta("web"),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.5", SessionAffinity: corev1.ServiceAffinityClientIP,
			Selector: map[string]string{"app": "web"}, ClusterIPs: []string{"10.0.0.5"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.1"}}}},
	}
	got := trimtest.Apply(t, trim.RemoteService, svc.DeepCopy()).(*corev1.Service)
	if got.ManagedFields != nil || got.OwnerReferences != nil || len(got.Status.LoadBalancer.Ingress) > 0 ||
		got.Spec.Selector != nil || got.Spec.Ports[0].NodePort != 0 || got.Spec.ClusterIP != "" {
		t.Errorf("kept what no controller reads: %+v", got)
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok || got.Annotations["keep"] != "me" {
		t.Errorf("annotations %v: want kubectl's copy gone, the others kept", got.Annotations)
	}
}

// A remote EndpointSlice trimmed keeps of each endpoint no target reference, node name, zone or
// hints, and no managedFields. (That it makes the same mirror slice as in full is the service
// mirror's test: package trimmed.)
func TestRemoteSliceKeepsOnlyWhatIsRead(t *testing.T) {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  meta("web-abc"),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"198.18.1.5"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: "web-0"},
			NodeName:   ptr.To("node-1"),
			Zone:       ptr.To("a"),
			Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}}},
		}},
	}
	got := trimtest.Apply(t, trim.RemoteSlice, s.DeepCopy()).(*discoveryv1.EndpointSlice)
	if e := got.Endpoints[0]; e.TargetRef != nil || e.NodeName != nil || e.Zone != nil || e.Hints != nil || got.ManagedFields != nil {
		t.Errorf("kept what no controller reads: %+v", got)
	}
}

// A remote Node keeps its annotations (the WireGuard keys and endpoints), pod CIDRs and
// addresses; its status otherwise goes.
func TestRemoteNodeKeepsKeysCIDRsAndAddresses(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: meta("node-1"),
		Spec:       corev1.NodeSpec{PodCIDR: "10.2.0.0/24", PodCIDRs: []string{"10.2.0.0/24"}, ProviderID: "aws:///i-1"},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}},
			Images:     []corev1.ContainerImage{{Names: []string{"registry/some-image:1"}, SizeBytes: 1 << 20}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	got := trimtest.Apply(t, trim.RemoteNode, n.DeepCopy()).(*corev1.Node)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-1", Namespace: "app", UID: "uid-1", ResourceVersion: "42", Labels: n.Labels,
			Annotations: map[string]string{"keep": "me"},
		},
		Spec:   corev1.NodeSpec{PodCIDR: "10.2.0.0/24", PodCIDRs: []string{"10.2.0.0/24"}},
		Status: corev1.NodeStatus{Addresses: n.Status.Addresses},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed Node (-want +got):\n%s", diff)
	}
}

// A remote pod trimmed makes the same network set, host-network or not, and keeps none of its
// annotations, managedFields, containers or conditions.
func TestRemotePodKeepsWhatANetworkSetIsMadeOf(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: meta("forwarder-0"),
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "forwarder", Image: "forwarder:1"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "198.18.0.5", PodIPs: []corev1.PodIP{{IP: "198.18.0.5"}, {IP: "fd00::5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	host := p.DeepCopy()
	host.Spec.HostNetwork = true
	for _, full := range []*corev1.Pod{p, host} {
		trimmed := trimtest.Apply(t, trim.RemotePod, full.DeepCopy()).(*corev1.Pod)
		wantNets, wantBad, wantRefused := netset.Nets([]*corev1.Pod{full}, addrguard.Remote{})
		nets, bad, refused := netset.Nets([]*corev1.Pod{trimmed}, addrguard.Remote{})
		if diff := cmp.Diff([]any{wantNets, wantBad, wantRefused}, []any{nets, bad, refused}); diff != "" {
			t.Errorf("hostNetwork=%v: the set of the trimmed pod differs (-full +trimmed):\n%s", full.Spec.HostNetwork, diff)
		}
		if trimmed.Annotations != nil || trimmed.ManagedFields != nil || trimmed.OwnerReferences != nil ||
			trimmed.Spec.Containers != nil || trimmed.Spec.NodeName != "" || trimmed.Status.Conditions != nil {
			t.Errorf("kept what no controller reads: %+v", trimmed)
		}
	}
}

// What a controller writes back loses only its managedFields: an update of the cached copy must
// not remove finalizers, owner references or annotations. Other objects (a tombstone) pass.
func TestManagedFieldsOnlyForWhatIsWrittenBack(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: meta("ours")}
	svc.Finalizers = []string{"example.com/keep"}
	got := trimtest.Apply(t, trim.ManagedFields, svc.DeepCopy()).(*corev1.Service)
	want := svc.DeepCopy()
	want.ManagedFields = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	trimtest.PassTombstone(t, svc, trim.ManagedFields, trim.RemoteService, trim.RemoteSlice, trim.RemoteNode, trim.RemotePod)
}
