package app_test

import (
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/testenv"
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
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"missing node name", []string{"SEMAPHORE_LOCAL_CLUSTER=gcp"}, []string{"SEMAPHORE_WG_NODE_NAME"}},
		{"no port for a remote", valid("SEMAPHORE_REMOTES=aws,merit"), []string{"SEMAPHORE_WG_LISTEN_PORTS", `"merit"`}},
		{"port for an unknown remote", valid("SEMAPHORE_WG_LISTEN_PORTS=aws:51821,azure:51822"), []string{"SEMAPHORE_WG_LISTEN_PORTS", `"azure"`}},
		{"port not a number", valid("SEMAPHORE_WG_LISTEN_PORTS=aws:x"), []string{"SEMAPHORE_WG_LISTEN_PORTS"}},
		{"port out of range", valid("SEMAPHORE_WG_LISTEN_PORTS=aws:70000"), []string{"SEMAPHORE_WG_LISTEN_PORTS", "70000"}},
		{"shared port", valid("SEMAPHORE_REMOTES=aws,merit", "SEMAPHORE_WG_LISTEN_PORTS=aws:51821,merit:51821"), []string{"SEMAPHORE_WG_LISTEN_PORTS", "51821"}},
		{"bad mode", valid("SEMAPHORE_WG_MODE=fast"), []string{"SEMAPHORE_WG_MODE", "fast"}},
		{"bad MTU", valid("SEMAPHORE_WG_MTU=100"), []string{"SEMAPHORE_WG_MTU"}},
		{"bad keepalive", valid("SEMAPHORE_WG_KEEPALIVE=soon"), []string{"SEMAPHORE_WG_KEEPALIVE"}},
		{"unknown pod address source", valid("SEMAPHORE_WG_POD_CIDRS_FROM=calico"), []string{"SEMAPHORE_WG_POD_CIDRS_FROM", "calico"}},
		{"unknown source of a remote", valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:ipam"), []string{"SEMAPHORE_WG_POD_CIDRS_FROM", "ipam"}},
		{"source for an unknown remote", valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:node,azure:calico-ipam"), []string{"SEMAPHORE_WG_POD_CIDRS_FROM", `"azure"`}},
		{"remote named twice", valid("SEMAPHORE_WG_POD_CIDRS_FROM=aws:node,aws:calico-ipam"), []string{"SEMAPHORE_WG_POD_CIDRS_FROM", `"aws"`}},
		{"relative key dir", valid("SEMAPHORE_WG_KEY_DIR=keys"), []string{"SEMAPHORE_WG_KEY_DIR"}},
		{
			// Both long names derive the device name wg-produ-2ee022 (found by brute force in
			// the peers tests); two devices cannot share a name.
			"conflicting device names",
			valid("SEMAPHORE_REMOTES=production-cluster-2146,production-cluster-6045",
				"SEMAPHORE_WG_LISTEN_PORTS=production-cluster-2146:51821,production-cluster-6045:51822"),
			[]string{"SEMAPHORE_REMOTES", "wg-produ-2ee022"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ExpectConfigError(t, testenv.RunBinary(t, bin, tc.env), tc.want...)
		})
	}
	if r := testenv.RunBinary(t, bin, nil, "-h"); r.Code != 0 || !strings.Contains(r.Stdout, "SEMAPHORE_WG_LISTEN_PORTS") {
		t.Errorf("-h: exit %d, stdout %q", r.Code, r.Stdout)
	}
}
