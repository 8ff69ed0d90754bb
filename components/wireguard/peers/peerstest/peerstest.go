// Package peerstest creates, in a test cluster, the Nodes that package peers reads: with the
// annotations semaphore-wireguard publishes, their addresses and pod CIDRs. It serves the tests
// of the wireguard controller, its app and the charts.
package peerstest

import (
	"context"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// Annotations are what semaphore-wireguard on a node publishes for cluster: its device's
// public key and the endpoint ("192.0.2.11:51821") that device listens on.
func Annotations(cluster string, key wgtypes.Key, endpoint string) map[string]string {
	return map[string]string{
		peers.PubKeyAnnotation(cluster):   key.String(),
		peers.EndpointAnnotation(cluster): endpoint,
	}
}

// CreateNode creates node name with annotations and pod CIDRs (the first is also
// spec.podCIDR) and, unless internalIP is empty, sets that InternalIP in its status as a
// kubelet would. The node is deleted when the test ends, so that tests can share a cluster.
func CreateNode(t testing.TB, client kubernetes.Interface, name, internalIP string, annotations map[string]string, podCIDRs ...string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: corev1.NodeSpec{PodCIDRs: podCIDRs}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	n, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if internalIP != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internalIP}}
		if n, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// SetAddresses replaces the addresses in the status of node name, as its kubelet would when
// they change.
func SetAddresses(t testing.TB, client kubernetes.Interface, name string, addresses ...corev1.NodeAddress) {
	t.Helper()
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = addresses
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
