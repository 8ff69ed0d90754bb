package mesh

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

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// HandshakeMetric is the gauge semaphore-wireguard exports for each peer: the Unix time of its
// last handshake (0 before the first), by remote and peer node.
const HandshakeMetric = "semaphore_wg_peer_last_handshake_timestamp_seconds"

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

// AdminPort is the port of a component's pod serving /metrics: its container port named
// admin, else the port of SEMAPHORE_ADMIN_ADDR, else the default 8080.
func AdminPort(c release.Component, pod *corev1.Pod) int {
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "admin" {
				return int(p.ContainerPort)
			}
		}
	}
	if _, port, err := net.SplitHostPort(c.Env["SEMAPHORE_ADMIN_ADDR"]); err == nil {
		if n, err := strconv.Atoi(port); err == nil {
			return n
		}
	}
	return 8080
}

// PeersOf reads the peers of the wireguard pod from its metrics.
func PeersOf(ctx context.Context, source MetricsSource, pod *corev1.Pod, port int) ([]Peer, error) {
	text, err := source.Metrics(ctx, pod, port)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics on port %d: %w", port, err)
	}
	return ParsePeers(bytes.NewReader(text), pod.Spec.NodeName)
}

// ParsePeers reads the peers of node from the metrics of its wireguard pod.
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
		if v := m.GetGauge().GetValue(); v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			sec, frac := math.Modf(v)
			p.LastHandshake = time.Unix(int64(sec), int64(frac*1e9)).UTC()
		}
		out = append(out, p)
	}
	return out, nil
}
