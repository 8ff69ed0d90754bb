package soak

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

func driftService(namespace, name string, l map[string]string, port int32) corev1.Service {
	return corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: l},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}},
	}
}

func driftSlice(namespace, name string, l map[string]string, ready map[string]bool) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: l}}
	for addr, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(r)}})
	}
	return s
}

// A mirror is in sync when it has its Service's ports and endpoints, ready conditions
// included; a missing mirror, a differing endpoint and a mirror of a Service no longer
// selected are each named.
func TestMirrorDriftComparesPortsAndEndpoints(t *testing.T) {
	src := mirror.Source{Cluster: "aws", Namespace: "app", Name: "web"}
	name := mirror.ServiceName(src)
	remote := &clusterObjects{
		services: []corev1.Service{driftService("app", "web", map[string]string{layout.MirrorLabel: "true"}, 80)},
		slices: []discoveryv1.EndpointSlice{driftSlice("app", "web-x", map[string]string{discoveryv1.LabelServiceName: "web"},
			map[string]bool{"198.18.1.5": true, "198.18.1.6": false})},
	}
	mirrored := mirror.Service(src, layout.SemaphoreNamespace, &remote.services[0])
	inSync := &clusterObjects{
		services: []corev1.Service{*mirrored},
		slices: []discoveryv1.EndpointSlice{driftSlice(layout.SemaphoreNamespace, "m", map[string]string{discoveryv1.LabelServiceName: name},
			map[string]bool{"198.18.1.5": true, "198.18.1.6": false})},
	}
	if d := mirrorDrift("gcp", inSync, "aws", remote); len(d) != 0 {
		t.Fatalf("in sync: %v", d)
	}

	notReady := &clusterObjects{services: inSync.services, slices: []discoveryv1.EndpointSlice{
		driftSlice(layout.SemaphoreNamespace, "m", map[string]string{discoveryv1.LabelServiceName: name}, map[string]bool{"198.18.1.5": false, "198.18.1.6": false})}}
	if d := mirrorDrift("gcp", notReady, "aws", remote); len(d) != 1 || !strings.Contains(d[0], "198.18.1.5 (not ready)") {
		t.Errorf("an endpoint not ready in the mirror only: %v", d)
	}
	if d := mirrorDrift("gcp", &clusterObjects{}, "aws", remote); len(d) != 1 || !strings.Contains(d[0], "no mirror of aws/app/web") {
		t.Errorf("no mirror: %v", d)
	}
	if d := mirrorDrift("gcp", inSync, "aws", &clusterObjects{}); len(d) != 1 || !strings.Contains(d[0], "no such Service") {
		t.Errorf("a mirror of a Service gone: %v", d)
	}
	moved := &clusterObjects{services: []corev1.Service{driftService("app", "web", map[string]string{layout.MirrorLabel: "true"}, 81)}, slices: remote.slices}
	if d := mirrorDrift("gcp", inSync, "aws", moved); len(d) != 1 || !strings.Contains(d[0], "differs") {
		t.Errorf("another port: %v", d)
	}
}

// A global service needs its Service and a copy of each of a cluster's slices with the same
// endpoints; a copy of a slice the cluster no longer has is named.
func TestGlobalDriftComparesEveryClustersSlices(t *testing.T) {
	k := global.Key{Namespace: "app", Name: "echo"}
	source := &clusterObjects{
		services: []corev1.Service{driftService("app", "echo", map[string]string{global.LabelGlobalService: "true"}, 80)},
		slices: []discoveryv1.EndpointSlice{driftSlice("app", "echo-a", map[string]string{discoveryv1.LabelServiceName: "echo"},
			map[string]bool{"198.18.2.7": true})},
	}
	gl := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: layout.SemaphoreNamespace, Name: global.ServiceName(k), Labels: global.Labels(k)}}
	copyOf := driftSlice(layout.SemaphoreNamespace, global.SliceName(k, "gcp", "echo-a"), global.SliceLabels(k, "gcp"), map[string]bool{"198.18.2.7": true})
	local := &clusterObjects{services: []corev1.Service{gl}, slices: []discoveryv1.EndpointSlice{copyOf}}
	if d := globalDrift("aws", local, "gcp", source); len(d) != 0 {
		t.Fatalf("in sync: %v", d)
	}
	if d := globalDrift("aws", &clusterObjects{}, "gcp", source); len(d) != 2 {
		t.Errorf("no Service and no copy: %v", d)
	}
	if d := globalDrift("aws", local, "gcp", &clusterObjects{}); len(d) != 1 || !strings.Contains(d[0], "no longer has") {
		t.Errorf("a copy of a slice gone: %v", d)
	}
	// Slices copied from another cluster are not this comparison's.
	if d := globalDrift("aws", local, "merit", &clusterObjects{}); len(d) != 0 {
		t.Errorf("another cluster's part: %v", d)
	}
}

// A set holds exactly its remote pods' addresses; a group without addresses has no set.
func TestSetDriftComparesNets(t *testing.T) {
	pod := func(name, ip string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: map[string]string{layout.PolicyLabel: "web"}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
		}
	}
	src := netset.Source{Cluster: "aws", Namespace: "app", Name: "web"}
	set := calico.GlobalNetworkSet{ObjectMeta: metav1.ObjectMeta{Name: netset.SetName(src), Labels: netset.Labels(src)}}
	set.Spec.Nets = []string{"198.18.1.5/32"}
	local := &clusterObjects{sets: []calico.GlobalNetworkSet{set}}
	if d := setDrift("gcp", local, "aws", &clusterObjects{policyPods: []corev1.Pod{pod("a", "198.18.1.5"), pod("b", "")}}); len(d) != 0 {
		t.Fatalf("in sync: %v", d)
	}
	if d := setDrift("gcp", local, "aws", &clusterObjects{policyPods: []corev1.Pod{pod("a", "198.18.1.5"), pod("b", "198.18.1.6")}}); len(d) != 1 || !strings.Contains(d[0], "198.18.1.6/32") {
		t.Errorf("a pod missing from the set: %v", d)
	}
	if d := setDrift("gcp", local, "aws", &clusterObjects{policyPods: []corev1.Pod{pod("b", "")}}); len(d) != 1 || !strings.Contains(d[0], "no such pods") {
		t.Errorf("a set without pods: %v", d)
	}
	if d := setDrift("gcp", &clusterObjects{}, "aws", &clusterObjects{policyPods: []corev1.Pod{pod("a", "198.18.1.5")}}); len(d) != 1 || !strings.Contains(d[0], "no GlobalNetworkSet") {
		t.Errorf("no set: %v", d)
	}
}
