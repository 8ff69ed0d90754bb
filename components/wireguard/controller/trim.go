package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// remoteNodeTransform is trim.RemoteNode keeping of a remote Node's metadata only the
// annotations it publishes for local (its public key, endpoint, path MTU and whether it is its
// cluster's active gateway) and no label: a remote may
// put up to 256 KiB of annotations on each of its Nodes, and none of the rest is read.
func remoteNodeTransform(local string) cache.TransformFunc {
	keep := []string{peers.PubKeyAnnotation(local), peers.EndpointAnnotation(local), peers.PathMTUAnnotation(local), peers.GatewayAnnotation(local)}
	return func(obj any) (any, error) {
		out, err := trim.RemoteNode(obj)
		n, ok := out.(*corev1.Node)
		if !ok {
			return out, err
		}
		n.Annotations, n.Labels = trim.Only(n.Annotations, keep), nil
		return n, err
	}
}
