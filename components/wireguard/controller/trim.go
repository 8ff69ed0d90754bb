package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/trim"
)

// remoteNodeTransform is trim.RemoteNode keeping of a remote Node's metadata only the two
// annotations it publishes for local (its public key and endpoint) and no label: a remote may
// put up to 256 KiB of annotations on each of its Nodes, and none of the rest is read.
func remoteNodeTransform(local string) cache.TransformFunc {
	keep := []string{peers.PubKeyAnnotation(local), peers.EndpointAnnotation(local)}
	return func(obj any) (any, error) {
		out, err := trim.RemoteNode(obj)
		n, ok := out.(*corev1.Node)
		if !ok {
			return out, err
		}
		var kept map[string]string
		for _, k := range keep {
			if v, found := n.Annotations[k]; found {
				if kept == nil {
					kept = make(map[string]string, len(keep))
				}
				kept[k] = v
			}
		}
		n.Annotations, n.Labels = kept, nil
		return n, err
	}
}
