package check

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// checkWireGuard checks, on every agent, that every node of the remote is a peer and that
// every peer of the remote has handshaken recently.
func checkWireGuard(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, opts Options, res func(string) Result) []Result {
	nodeList, err := remote.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Result{fail(res(Peers), "check-access", "listing the nodes of remote %s: %v", remoteName, err)}
	}
	pods, err := c.Pods(ctx, local)
	if err != nil {
		return []Result{fail(res(Peers), "check-peers", "listing the pods of %s: %v", c.WorkloadRef(), err)}
	}
	var missing, stale, unread []string
	read, peers := 0, 0
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue // the pods check reports it
		}
		where := fmt.Sprintf("pod %s (node %s)", pod.Name, pod.Spec.NodeName)
		text, err := opts.Metrics(ctx, pod)
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		hs, err := handshakes(text, pod.Spec.NodeName)
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		read++
		for _, n := range nodeList.Items {
			if _, ok := hs[remoteName][n.Name]; !ok {
				missing = append(missing, fmt.Sprintf("%s lacks %s", where, n.Name))
			}
		}
		for peer, ts := range hs[remoteName] {
			peers++
			if why := agents.Stale(ts, opts.Now(), opts.MaxHandshakeAge); why != "" {
				stale = append(stale, fmt.Sprintf("%s: peer %s %s", where, peer, why))
			}
		}
	}
	var out []Result
	switch {
	case len(unread) > 0:
		out = append(out, fail(res(Peers), "check-peers", "reading the metrics of the wireguard agents through the API server's pod proxy: %s", most(unread, 3)))
	case len(missing) > 0:
		out = append(out, fail(res(Peers), "check-peers", "%d nodes of remote %s are not peers: %s; semaphore_wg_skipped_peers{remote=%q} says why",
			len(missing), remoteName, most(missing, 5), remoteName))
	default:
		out = append(out, pass(res(Peers), "each of %d agents has the %d nodes of remote %s as peers", read, len(nodeList.Items), remoteName))
	}
	if len(unread) == 0 {
		if len(stale) > 0 {
			out = append(out, fail(res(Handshakes), "check-handshakes", "%d peers of remote %s have no handshake in the last %s: %s; check UDP between the nodes",
				len(stale), remoteName, opts.MaxHandshakeAge, most(stale, 5)))
		} else {
			out = append(out, pass(res(Handshakes), "%d peers of remote %s handshook in the last %s", peers, remoteName, opts.MaxHandshakeAge))
		}
	}
	return out
}

// handshakes are the last handshakes of node's agent, by remote and peer node (zero: never),
// read from its metrics text.
func handshakes(text []byte, node string) (map[string]map[string]time.Time, error) {
	peers, err := agents.ParsePeers(bytes.NewReader(text), node)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]time.Time{}
	for _, p := range peers {
		if out[p.Remote] == nil {
			out[p.Remote] = map[string]time.Time{}
		}
		out[p.Remote][p.Peer] = p.LastHandshake
	}
	return out, nil
}
