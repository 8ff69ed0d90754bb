package global_test

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
)

func svc(headless bool, strategy string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}, Spec: corev1.ServiceSpec{Ports: ports}}
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	if strategy != "" {
		s.Labels[global.LabelRoutingStrategy] = strategy
	}
	return s
}

func port(name string, n int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: n, Protocol: corev1.ProtocolTCP, TargetPort: target}
}

// The first cluster in name order decides, whatever order the definitions come in; every
// cluster that differs is a conflict, and differences that do not change routing (target
// ports, port order) are none.
func TestDecideIsDeterministic(t *testing.T) {
	web := port("http", 80, intstr.FromInt32(8080))
	defs := []global.Definition{
		global.DefinitionOf("gcp", svc(false, "", web, port("grpc", 90, intstr.FromInt32(9090)))),
		global.DefinitionOf("aws", svc(false, "", port("grpc", 90, intstr.FromString("grpc")), port("http", 80, intstr.FromInt32(80)))),
		global.DefinitionOf("merit", svc(true, "", web)),
		global.DefinitionOf("azure", svc(false, global.LocalFirst, web)),
	}
	for i := range 4 {
		rotated := append(slices.Clone(defs[i:]), defs[:i]...)
		m := global.Decide(rotated)
		if m.Used.Cluster != "aws" {
			t.Errorf("order %d: used %s, want aws", i, m.Used.Cluster)
		}
		if want := []string{"azure", "merit"}; !slices.Equal(m.Conflicts, want) {
			t.Errorf("order %d: conflicts %v, want %v (gcp differs in target ports and order only)", i, m.Conflicts, want)
		}
	}
}

// Local endpoints are hinted for every local zone, remote ones for a zone of their own that no
// local zone can be, even one named like it.
func TestHints(t *testing.T) {
	h := global.Hints{LocalZones: []string{"semaphore-remote-aws", "z1"}}
	if !h.Usable() {
		t.Fatal("two zones not usable")
	}
	local := h.For("gcp", true)
	if len(local.ForZones) != 2 {
		t.Errorf("local hints %v", local.ForZones)
	}
	remote := h.For("aws", false)
	if len(remote.ForZones) != 1 || slices.Contains(h.LocalZones, remote.ForZones[0].Name) {
		t.Errorf("remote hints %v share a local zone", remote.ForZones)
	}
	for _, zones := range [][]string{nil, {"1", "2", "3", "4", "5", "6", "7", "8", "9"}} {
		if (global.Hints{LocalZones: zones}).Usable() {
			t.Errorf("%d zones usable", len(zones))
		}
	}
}

// Our annotations follow the definition used, and are removed when it no longer has them;
// an equal Service is not written.
func TestUpdateServiceAnnotations(t *testing.T) {
	k := global.Key{Namespace: "ns", Name: "api"}
	web := port("http", 80, intstr.FromInt32(8080))
	actual := global.Service(k, "semaphore", global.DefinitionOf("aws", svc(false, global.LocalFirst, web)))
	actual.Annotations["someone-else"] = "kept"
	if change, _ := global.UpdateService(global.Service(k, "semaphore", global.DefinitionOf("aws", svc(false, global.LocalFirst, web))), actual); change != mirror.NoChange {
		t.Errorf("equal Service: change %v", change)
	}
	change, next := global.UpdateService(global.Service(k, "semaphore", global.DefinitionOf("gcp", svc(false, "", web))), actual)
	if change != mirror.Update {
		t.Fatalf("change %v, want an update", change)
	}
	want := map[string]string{global.AnnotationDefinitionFrom: "gcp", "someone-else": "kept"}
	if !maps.Equal(next.Annotations, want) {
		t.Errorf("annotations %v, want %v", next.Annotations, want)
	}
}
