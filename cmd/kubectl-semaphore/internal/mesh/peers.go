package mesh

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// peers reads the peers of every wireguard pod from its metrics.
func (st *ClusterState) peers(ctx context.Context, s Sources, c release.Component, remote func(string) *RemoteState) {
	pods, err := c.Pods(ctx, s.Client)
	if err != nil {
		st.problem("listing the wireguard pods: %v", err)
		return
	}
	source := s.Metrics
	if source == nil {
		source = agents.PodProxy{Client: s.Client}
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != "" && !slices.Contains(st.Nodes, pod.Spec.NodeName) {
			st.Nodes = append(st.Nodes, pod.Spec.NodeName)
		}
		if pod.Status.Phase != corev1.PodRunning {
			st.problem("wireguard pod %s/%s on node %s is %s: its peers are not known", pod.Namespace, pod.Name, pod.Spec.NodeName, cmp.Or(string(pod.Status.Phase), "not running"))
			continue
		}
		peers, err := agents.PeersOf(ctx, source, pod)
		if err != nil {
			st.problem("wireguard pod %s/%s on node %s: %v", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
			continue
		}
		for _, p := range peers {
			r := remote(p.Remote)
			r.Peers = append(r.Peers, p)
		}
	}
}
