package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// A remote Node's cached copy keeps its key, endpoint, path MTU and gateway term for this cluster, its pod CIDRs and
// addresses, and nothing else a remote can fill: not another cluster's annotations, not a
// huge annotation, not its labels.
func TestRemoteNodesAreCachedWithOnlyWhatPeersAreMadeOf(t *testing.T) {
	in := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7",
			Labels: map[string]string{"big": "x"},
			Annotations: map[string]string{
				peers.PubKeyAnnotation("gcp"):   "key",
				peers.EndpointAnnotation("gcp"): "192.0.2.1:51821",
				peers.PathMTUAnnotation("gcp"):  "1460",
				peers.GatewayAnnotation("gcp"):  "4",
				peers.PubKeyAnnotation("merit"): "other key",
				peers.GatewayAnnotation("aws"):  "5",
				"huge":                          strings.Repeat("x", 200<<10),
			}},
		Spec:   corev1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24"}, Taints: []corev1.Taint{{Key: "t"}}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}, Images: []corev1.ContainerImage{{Names: []string{"i"}}}},
	}
	out, err := remoteNodeTransform("gcp")(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7", Annotations: map[string]string{
			peers.PubKeyAnnotation("gcp"): "key", peers.EndpointAnnotation("gcp"): "192.0.2.1:51821", peers.PathMTUAnnotation("gcp"): "1460",
			peers.GatewayAnnotation("gcp"): "4",
		}},
		Spec:   corev1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24"}},
		Status: corev1.NodeStatus{Addresses: in.Status.Addresses},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("cached node (-want +got):\n%s", diff)
	}
}
