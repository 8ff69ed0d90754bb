package check

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// HandshakeMetric is the gauge of the last handshake of each peer of a semaphore-wireguard agent.
const HandshakeMetric = "semaphore_wg_peer_last_handshake_timestamp_seconds"

// ParseHandshakes reads the last handshake of every peer from a wireguard agent's /metrics text:
// by remote, then peer node, the Unix time (0 before the first handshake).
func ParseHandshakes(text []byte) (map[string]map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics: %w", err)
	}
	out := map[string]map[string]float64{}
	f, ok := families[HandshakeMetric]
	if !ok {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		var remote, peer string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "remote":
				remote = l.GetValue()
			case "peer":
				peer = l.GetValue()
			}
		}
		if out[remote] == nil {
			out[remote] = map[string]float64{}
		}
		v := m.GetGauge().GetValue()
		if m.Gauge == nil {
			v = m.GetUntyped().GetValue()
		}
		out[remote][peer] = v
	}
	return out, nil
}

// StaleHandshake says what is wrong with a peer whose last handshake was at Unix time ts
// ("" when it is no older than maxAge).
func StaleHandshake(ts float64, now time.Time, maxAge time.Duration) string {
	if ts <= 0 {
		return "never handshook"
	}
	sec, frac := math.Modf(ts)
	at := time.Unix(int64(sec), int64(frac*1e9))
	if age := now.Sub(at); age > maxAge {
		return fmt.Sprintf("last handshake %s ago", age.Round(time.Second))
	}
	return ""
}

// checkWireGuard checks, on every agent, that every node of the remote is a peer and that
// every peer of the remote has handshaken recently.
func checkWireGuard(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, opts Options, res func(string) Result) []Result {
	nodeList, err := remote.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Result{fail(res(Peers), "check-access", "listing the nodes of remote %s: %v", remoteName, err)}
	}
	pods, err := c.Pods(ctx, local)
	if err != nil {
		return []Result{fail(res(Peers), "check-peers", "listing the pods of %s %s/%s: %v", c.Kind, c.Namespace, c.Workload, err)}
	}
	var missing, stale, unread []string
	agents, peers := 0, 0
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
		hs, err := ParseHandshakes(text)
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		agents++
		for _, n := range nodeList.Items {
			if _, ok := hs[remoteName][n.Name]; !ok {
				missing = append(missing, fmt.Sprintf("%s lacks %s", where, n.Name))
			}
		}
		for peer, ts := range hs[remoteName] {
			peers++
			if why := StaleHandshake(ts, opts.Now(), opts.MaxHandshakeAge); why != "" {
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
		out = append(out, pass(res(Peers), "each of %d agents has the %d nodes of remote %s as peers", agents, len(nodeList.Items), remoteName))
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
