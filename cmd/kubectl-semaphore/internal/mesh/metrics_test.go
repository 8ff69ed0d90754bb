package mesh_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

const wgMetrics = `# HELP semaphore_wg_peer_last_handshake_timestamp_seconds Unix time of the last handshake with a peer (0 before the first), by remote and peer node.
# TYPE semaphore_wg_peer_last_handshake_timestamp_seconds gauge
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-1",remote="aws"} 1.7959824e+09
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-2",remote="aws"} 0
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="merit-1",remote="merit"} 1.7959824125e+09
# HELP semaphore_wg_peers Peers configured on the device of a remote, by device and remote.
# TYPE semaphore_wg_peers gauge
semaphore_wg_peers{device="wg-aws",remote="aws"} 2
`

func TestParsePeers(t *testing.T) {
	got, err := mesh.ParsePeers(strings.NewReader(wgMetrics), "gcp-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []mesh.Peer{
		{Node: "gcp-1", Remote: "aws", Peer: "aws-1", LastHandshake: time.Unix(1795982400, 0).UTC()},
		{Node: "gcp-1", Remote: "aws", Peer: "aws-2"},
		{Node: "gcp-1", Remote: "merit", Peer: "merit-1", LastHandshake: time.Unix(1795982412, 500_000_000).UTC()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}

	if _, err := mesh.ParsePeers(strings.NewReader("not metrics {"), "gcp-1"); err == nil {
		t.Error("parsing garbage: no error")
	}
	if got, err := mesh.ParsePeers(strings.NewReader("# no peers yet\n"), "gcp-1"); err != nil || len(got) != 0 {
		t.Errorf("no peers: %v, %v", got, err)
	}
}

// The admin port comes from the pod's container port named admin, else SEMAPHORE_ADMIN_ADDR,
// else the default.
func TestAdminPort(t *testing.T) {
	pod := func(ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "wireguard", Ports: ports}}}}
	}
	c := release.Component{Env: map[string]string{"SEMAPHORE_ADMIN_ADDR": ":9090"}}
	for _, tc := range []struct {
		c    release.Component
		pod  *corev1.Pod
		want int
	}{
		{c, pod(corev1.ContainerPort{Name: "wg-aws", ContainerPort: 51821}, corev1.ContainerPort{Name: "admin", ContainerPort: 8081}), 8081},
		{c, pod(corev1.ContainerPort{Name: "wg-aws", ContainerPort: 51821}), 9090},
		{release.Component{}, pod(), 8080},
	} {
		if got := mesh.AdminPort(tc.c, tc.pod); got != tc.want {
			t.Errorf("AdminPort(%v, %v) = %d, want %d", tc.c.Env, tc.pod.Spec.Containers[0].Ports, got, tc.want)
		}
	}
}

// staticMetrics serves fixed metrics text by pod name, for pods without a kubelet behind them.
type staticMetrics map[string]string

func (s staticMetrics) Metrics(_ context.Context, pod *corev1.Pod, _ int) ([]byte, error) {
	text, ok := s[pod.Name]
	if !ok {
		return nil, errors.New("no metrics for pod " + pod.Name)
	}
	return []byte(text), nil
}
