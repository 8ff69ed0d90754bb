package mesh

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
)

// peers reads the peers of every running wireguard pod from its metrics.
func (st *ClusterState) peers(v view, remote func(string) *RemoteState) {
	if v.err != nil {
		st.problem("listing the wireguard pods: %v", v.err)
		return
	}
	for i := range v.pods {
		pod := &v.pods[i]
		if pod.Spec.NodeName != "" && !slices.Contains(st.Nodes, pod.Spec.NodeName) {
			st.Nodes = append(st.Nodes, pod.Spec.NodeName)
		}
		if pod.Status.Phase != corev1.PodRunning {
			st.problem("wireguard pod %s/%s on node %s is %s: its peers are not known", pod.Namespace, pod.Name, pod.Spec.NodeName, cmp.Or(string(pod.Status.Phase), "not running"))
		}
	}
	for _, p := range v.running {
		if p.err != nil {
			st.problem("wireguard pod %s/%s on node %s: %v", p.pod.Namespace, p.pod.Name, p.pod.Spec.NodeName, p.err)
			continue
		}
		for _, peer := range agents.Peers(p.metrics, p.pod.Spec.NodeName) {
			r := remote(peer.Remote)
			r.Peers = append(r.Peers, peer)
		}
	}
}
