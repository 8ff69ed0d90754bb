package app_test

import (
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// Bad configuration, conflicting device names included,
// exits non-zero with one line naming the variable. None of these cases gets as far as
// touching the host's network, so this runs without root and without an API server.
func TestBadConfiguration(t *testing.T) {
	bin := testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/components/wireguard")
	valid := func(extra ...string) []string {
		return append([]string{
			"SEMAPHORE_LOCAL_CLUSTER=gcp",
			"SEMAPHORE_REMOTES=aws",
			"SEMAPHORE_WG_LISTEN_PORTS=aws:51821",
			"SEMAPHORE_WG_NODE_NAME=gcp-node-1",
			"SEMAPHORE_WG_KEY_DIR=" + t.TempDir(),
		}, extra...)
	}
	fixture.ExpectConfigErrors(t, bin, []fixture.ConfigCase{
		{Name: "missing node name", Env: []string{"SEMAPHORE_LOCAL_CLUSTER=gcp"}, Want: []string{"SEMAPHORE_WG_NODE_NAME"}},
		{Name: "no port for a remote", Env: valid("SEMAPHORE_REMOTES=aws,merit"), Want: []string{"SEMAPHORE_WG_LISTEN_PORTS", `"merit"`}},
		{Name: "port for an unknown remote", Env: valid("SEMAPHORE_WG_LISTEN_PORTS=aws:51821,azure:51822"), Want: []string{"SEMAPHORE_WG_LISTEN_PORTS", `"azure"`}},
		{Name: "port not a number", Env: valid("SEMAPHORE_WG_LISTEN_PORTS=aws:x"), Want: []string{"SEMAPHORE_WG_LISTEN_PORTS"}},
		{Name: "port out of range", Env: valid("SEMAPHORE_WG_LISTEN_PORTS=aws:70000"), Want: []string{"SEMAPHORE_WG_LISTEN_PORTS", "70000"}},
		{Name: "shared port", Env: valid("SEMAPHORE_REMOTES=aws,merit", "SEMAPHORE_WG_LISTEN_PORTS=aws:51821,merit:51821"), Want: []string{"SEMAPHORE_WG_LISTEN_PORTS", "51821"}},
		{Name: "bad mode", Env: valid("SEMAPHORE_WG_MODE=fast"), Want: []string{"SEMAPHORE_WG_MODE", "fast"}},
		{Name: "bad MTU", Env: valid("SEMAPHORE_WG_MTU=100"), Want: []string{"SEMAPHORE_WG_MTU"}},
		{Name: "MTU neither auto nor a number", Env: valid("SEMAPHORE_WG_MTU=aws:big"), Want: []string{"SEMAPHORE_WG_MTU", "big"}},
		{Name: "MTU of an unknown remote", Env: valid("SEMAPHORE_WG_MTU=azure:1380,auto"), Want: []string{"SEMAPHORE_WG_MTU", `"azure"`}},
		{Name: "endpoint address type not an address", Env: valid("SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES=Hostname,InternalIP"), Want: []string{"SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES", "Hostname"}},
		{Name: "endpoint address types of an unknown remote", Env: valid("SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES=azure:InternalIP"), Want: []string{"SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES", `"azure"`}},
		{Name: "bad keepalive", Env: valid("SEMAPHORE_WG_KEEPALIVE=soon"), Want: []string{"SEMAPHORE_WG_KEEPALIVE"}},
		{Name: "unknown pod address source", Env: valid("SEMAPHORE_WG_POD_CIDRS_FROM=calico"), Want: []string{"SEMAPHORE_WG_POD_CIDRS_FROM", "calico"}},
		{Name: "unknown source of a remote", Env: valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:ipam"), Want: []string{"SEMAPHORE_WG_POD_CIDRS_FROM", "ipam"}},
		{Name: "source for an unknown remote", Env: valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:node,azure:calico-ipam"), Want: []string{"SEMAPHORE_WG_POD_CIDRS_FROM", `"azure"`}},
		{Name: "remote named twice", Env: valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:node,aws:calico-ipam"), Want: []string{"SEMAPHORE_WG_POD_CIDRS_FROM", `"aws"`}},
		{Name: "pod range not a CIDR", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=aws:198.18.0.0"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", "198.18.0.0"}},
		{Name: "pod range with host bits", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=aws:198.18.0.1/16"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", "host bits"}},
		{Name: "pod range without a remote", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=198.18.0.0/16"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", "remote:CIDR"}},
		{Name: "pod range of an unknown remote", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=aws:198.18.0.0/16,azure:198.19.0.0/16"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", `"azure"`}},
		{Name: "pod range inside loopback", Env: valid("SEMAPHORE_REMOTE_POD_RANGES=aws:127.0.0.0/16"), Want: []string{"SEMAPHORE_REMOTE_POD_RANGES", "127.0.0.0/8"}},
		{Name: "endpoint range not a CIDR", Env: valid("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES=aws:203.0.113.7"), Want: []string{"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES", "203.0.113.7"}},
		{Name: "endpoint range without a remote", Env: valid("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES=203.0.113.0/24"), Want: []string{"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES", "remote:CIDR"}},
		{Name: "endpoint range of an unknown remote", Env: valid("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES=aws:203.0.113.0/24,azure:2001:db8::/64"), Want: []string{"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES", `"azure"`}},
		{Name: "endpoint range inside link-local", Env: valid("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES=aws:169.254.169.0/24"), Want: []string{"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES", "169.254.0.0/16"}},
		{Name: "no peers allowed", Env: valid("SEMAPHORE_WG_MAX_PEERS_PER_REMOTE=0"), Want: []string{"SEMAPHORE_WG_MAX_PEERS_PER_REMOTE", "0"}},
		{Name: "negative peer limit", Env: valid("SEMAPHORE_WG_MAX_PEERS_PER_REMOTE=-1"), Want: []string{"SEMAPHORE_WG_MAX_PEERS_PER_REMOTE", "-1"}},
		{Name: "peer limit not a number", Env: valid("SEMAPHORE_WG_MAX_PEERS_PER_REMOTE=many"), Want: []string{"SEMAPHORE_WG_MAX_PEERS_PER_REMOTE"}},
		{Name: "relative key dir", Env: valid("SEMAPHORE_WG_KEY_DIR=keys"), Want: []string{"SEMAPHORE_WG_KEY_DIR"}},
		{Name: "unknown topology", Env: valid("SEMAPHORE_WG_TOPOLOGY=star"), Want: []string{"SEMAPHORE_WG_TOPOLOGY", "star"}},
		{Name: "topology of an unknown remote", Env: valid("SEMAPHORE_WG_TOPOLOGY=azure:gateway,mesh"), Want: []string{"SEMAPHORE_WG_TOPOLOGY", `"azure"`}},
		{Name: "gateway nodes not a selector", Env: valid("SEMAPHORE_WG_GATEWAY_NODES=role in gateway"), Want: []string{"SEMAPHORE_WG_GATEWAY_NODES"}},
		{Name: "every node a gateway", Env: valid("SEMAPHORE_WG_TOPOLOGY=gateway", "SEMAPHORE_WG_GATEWAY_NODES=", "POD_NAMESPACE=semaphore"), Want: []string{"SEMAPHORE_WG_GATEWAY_NODES", "not every node"}},
		{Name: "gateways without a namespace for their Leases", Env: valid("SEMAPHORE_WG_TOPOLOGY=aws:gateway", "POD_NAMESPACE="), Want: []string{"POD_NAMESPACE"}},
		{
			// Both long names derive the device name wg-produ-2ee022 (found by brute force in
			// the peers tests); two devices cannot share a name.
			Name: "conflicting device names",
			Env: valid("SEMAPHORE_REMOTES=production-cluster-2146,production-cluster-6045",
				"SEMAPHORE_WG_LISTEN_PORTS=production-cluster-2146:51821,production-cluster-6045:51822"),
			Want: []string{"SEMAPHORE_REMOTES", "wg-produ-2ee022"},
		},
	})
	fixture.ExpectHelp(t, bin, "SEMAPHORE_WG_LISTEN_PORTS")
}
