// Package agents reads what the semaphore-wireguard agents report about their peers: the last
// handshake of each peer, from each agent's /metrics through the API server's pod proxy.
package agents

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
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

// AdminPort is the port of a pod's admin server (/metrics): its container port named admin,
// else the port of SEMAPHORE_ADMIN_ADDR in its containers' environment, else the default 8080.
func AdminPort(pod *corev1.Pod) int {
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "admin" {
				return int(p.ContainerPort)
			}
		}
	}
	for _, ctr := range pod.Spec.Containers {
		for _, e := range ctr.Env {
			if e.Name != "SEMAPHORE_ADMIN_ADDR" {
				continue
			}
			if _, port, err := net.SplitHostPort(e.Value); err == nil {
				if n, err := strconv.Atoi(port); err == nil {
					return n
				}
			}
		}
	}
	return 8080
}

// PeersOf reads the peers of the wireguard pod from its metrics.
func PeersOf(ctx context.Context, source MetricsSource, pod *corev1.Pod) ([]Peer, error) {
	port := AdminPort(pod)
	text, err := source.Metrics(ctx, pod, port)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics on port %d through the API server's pod proxy: %w", port, err)
	}
	return ParsePeers(bytes.NewReader(text), pod.Spec.NodeName)
}

// ParsePeers reads the peers of node from the metrics of its wireguard pod; other series are
// ignored.
func ParsePeers(r io.Reader, node string) ([]Peer, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	var out []Peer
	for _, m := range families[HandshakeMetric].GetMetric() {
		p := Peer{Node: node}
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "remote":
				p.Remote = l.GetValue()
			case "peer":
				p.Peer = l.GetValue()
			}
		}
		if p.Remote == "" || p.Peer == "" {
			continue
		}
		v := m.GetGauge().GetValue()
		if m.Gauge == nil { // exposed without a TYPE line
			v = m.GetUntyped().GetValue()
		}
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			sec, frac := math.Modf(v)
			p.LastHandshake = time.Unix(int64(sec), int64(frac*1e9)).UTC()
		}
		out = append(out, p)
	}
	return out, nil
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
