package check_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// What the wireguard agents say of their peers, devices and paths: a handshake that fails says
// which side cannot reach which, nodes skipped are named with the reason, userspace WireGuard is
// a warning, and a device MTU the path cannot carry fails.
func TestWireGuardFindingsComeFromTheAgents(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	never := func(published string) func(string, metricLines) {
		return only("wireguard", func(m metricLines) {
			m[agents.HandshakeMetric+`{peer="aws-node-1",remote="aws"}`] = 0
			m.drop("semaphore_wg_peer_info")
			m[`semaphore_wg_peer_info{endpoint_published="`+published+`",peer="aws-node-1",remote="aws"}`] = 1
			m[`semaphore_wg_peers_without_handshake{remote="aws"}`] = 1
		})
	}
	for _, c := range []podCase{
		{name: "a peer whose published endpoint this node cannot reach", check: check.Handshakes, component: "wireguard", fails: true,
			change: never("true"),
			says:   "node gcp-node-1 has never completed a handshake with aws-node-1 (endpoint published: the aws node's endpoint is unreachable from gcp-node-1, or its firewall drops UDP to the port it publishes)"},
		{name: "a peer that publishes no endpoint and does not open the tunnel", check: check.Handshakes, component: "wireguard", fails: true,
			change: never("false"),
			says:   "node gcp-node-1 has never completed a handshake with aws-node-1: aws-node-1 publishes no endpoint, so it must open the tunnel itself; check its keepalive and outbound UDP to gcp-node-1's UDP port 51821"},
		{name: "a handshake too old", check: check.Handshakes, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) {
				m[agents.HandshakeMetric+`{peer="aws-node-1",remote="aws"}`] = float64(s.pods.now.Add(-10 * time.Minute).Unix())
			}),
			says: "node gcp-node-1 has no recent handshake with aws-node-1 (last handshake 10m0s ago)", alsoSays: "endpoint published"},
		{name: "agents of a version that does not say who publishes an endpoint", check: check.Handshakes, component: "wireguard", warns: true,
			change: only("wireguard", func(m metricLines) { m.drop("semaphore_wg_peer_info") }),
			says:   "export no semaphore_wg_peer_info"},
		{name: "nodes of the remote skipped", check: check.Peers, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) { m[`semaphore_wg_skipped_peers{reason="bad_endpoint",remote="aws"}`] = 2 }),
			says:   "pod semaphore-wireguard-0 (node gcp-node-1): bad_endpoint 2"},
		{name: "this cluster reaches the remote through its gateway, this agent's node", check: check.Peers, component: "wireguard",
			change: only("wireguard", func(m metricLines) {
				m[`semaphore_wg_gateway_role{remote="aws",role="active"}`] = 1
				m[`semaphore_wg_gateway_role{remote="aws",role="standby"}`] = 0
			}),
			says: "this cluster reaches remote aws through its gateway gcp-node-1"},
		{name: "this cluster reaches the remote through gateways, none active", check: check.Peers, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) {
				m[`semaphore_wg_gateway_role{remote="aws",role="active"}`] = 0
				m[`semaphore_wg_gateway_role{remote="aws",role="standby"}`] = 1
			}),
			says: "this cluster reaches remote aws through gateways, but no agent is the active gateway"},
		{name: "userspace WireGuard", check: check.WireGuardMode, component: "wireguard", warns: true,
			change: only("wireguard", func(m metricLines) {
				m.drop("semaphore_wg_device_info")
				m[`semaphore_wg_device_info{device="wg-aws",implementation="userspace",remote="aws"}`] = 1
			}),
			says: "userspace WireGuard (wireguard-go) for remote aws on nodes gcp-node-1"},
		{name: "agents of a version that does not say their implementation", check: check.WireGuardMode, component: "wireguard", warns: true,
			change: only("wireguard", func(m metricLines) { m.drop("semaphore_wg_device_info") }),
			says:   "export no semaphore_wg_device_info"},
		{name: "a device MTU over the path's", check: check.MTU, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) { m[`semaphore_wg_device_mtu{remote="aws"}`] = 1480 }),
			says:   "node gcp-node-1: 1480 > 1500 - 60 (IPv4)"},
		{name: "a device MTU that fits the path over IPv4 only, the family not known", check: check.MTU, component: "wireguard", warns: true,
			change: only("wireguard", func(m metricLines) { m[`semaphore_wg_device_mtu{remote="aws"}`] = 1440 }),
			says:   "fits the path over IPv4 but not over IPv6 on node gcp-node-1: 1440 > 1500 - 80"},
		{name: "agents of a version that does not say their MTU", check: check.MTU, component: "wireguard", warns: true,
			change: only("wireguard", func(m metricLines) { m.drop("semaphore_wg_path_mtu") }),
			says:   "export no semaphore_wg_device_mtu or semaphore_wg_path_mtu"},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}

	// The node publishes an IPv6 endpoint for aws: WireGuard's overhead is 80 bytes.
	t.Run("a device MTU over an IPv6 path's", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gcp-node-1", Annotations: map[string]string{peers.EndpointAnnotation("aws"): "[2001:db8::21]:51821"}}}
		clustertest.Create(t, gcp, node)
		defer func() {
			_ = gcp.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		}()
		podCase{check: check.MTU, component: "wireguard", fails: true,
			change: only("wireguard", func(m metricLines) { m[`semaphore_wg_device_mtu{remote="aws"}`] = 1440 }),
			says:   "node gcp-node-1: 1440 > 1500 - 80 (IPv6)"}.run(t, s)
	})
}
