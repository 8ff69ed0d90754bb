// Package agents reads what the semaphore-wireguard agents report about their peers: the last
// handshake of each peer, from each agent's /metrics through the API server's pod proxy.
package agents

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/promtext"
)

// HandshakeMetric is the gauge semaphore-wireguard exports for each peer: the Unix time of its
// last handshake (0 before the first), by remote and peer node.
const HandshakeMetric = "semaphore_wg_peer_last_handshake_timestamp_seconds"

// MaxHandshakeAge is how old a last handshake may be on a working tunnel: WireGuard
// re-handshakes every 2 minutes while traffic or keepalives flow.
const MaxHandshakeAge = 3 * time.Minute

// Peer is one peer of an agent: node's agent has peer, a node of remote.
type Peer struct {
	Node   string `json:"node"`
	Remote string `json:"remote"`
	Peer   string `json:"peer"`
	// LastHandshake is zero before the first handshake.
	LastHandshake time.Time `json:"lastHandshake"`
}

// MetricsSource reads the Prometheus text exposition of a pod's /metrics on port. It is an
// interface because the pod proxy needs a kubelet, which test API servers do not have.
type MetricsSource interface {
	Metrics(ctx context.Context, pod *corev1.Pod, port int) ([]byte, error)
}

// PodProxy reads metrics through the API server's pod proxy, which reaches a pod wherever the
// command runs (semaphore-wireguard runs on the host network, its admin port on the node).
type PodProxy struct{ Client kubernetes.Interface }

// Metrics implements MetricsSource.
func (p PodProxy) Metrics(ctx context.Context, pod *corev1.Pod, port int) ([]byte, error) {
	return p.Client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, strconv.Itoa(port), "metrics", nil).DoRaw(ctx)
}

// ParsePeers reads the peers of node from the metrics of its wireguard pod; other series are
// ignored.
func ParsePeers(r io.Reader, node string) ([]Peer, error) {
	m, err := promtext.Parse(r)
	if err != nil {
		return nil, err
	}
	return Peers(m, node), nil
}

// Peers are the peers of node in the metrics of its wireguard pod.
func Peers(m promtext.Metrics, node string) []Peer {
	var out []Peer
	for _, s := range m.Where(HandshakeMetric) {
		p := Peer{Node: node, Remote: s.Labels["remote"], Peer: s.Labels["peer"], LastHandshake: promtext.Time(s.Value)}
		if p.Remote != "" && p.Peer != "" {
			out = append(out, p)
		}
	}
	return out
}

// Stale says what is wrong with a peer whose last handshake was at (zero: never), "" when it
// is no older than maxAge at now.
func Stale(at, now time.Time, maxAge time.Duration) string {
	if at.IsZero() {
		return "never handshook"
	}
	if age := now.Sub(at); age > maxAge {
		return fmt.Sprintf("last handshake %s ago", age.Round(time.Second))
	}
	return ""
}
