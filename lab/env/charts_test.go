package env

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// renderUmbrella renders the umbrella chart for cluster with the values the guide gives it:
// what kubectl semaphore link writes for its remotes, then the lab's own (labValues).
func renderUmbrella(t *testing.T, cluster string) string {
	t.Helper()
	var remotes []any
	ports := map[string]any{}
	for i, r := range layout.RemotesOf(cluster) {
		// As kubectl semaphore link writes it.
		remotes = append(remotes, map[string]any{
			"name": r, "server": "https://127.0.0.1:6443", "caData": "Q0EK", "podRanges": []any{layout.SpecOf(r).PodCIDR},
			"tokenSecret": map[string]any{"name": "semaphore-remote-" + r, "key": "token"},
		})
		ports[r] = 51821 + i
	}
	values := (&Lab{registry: "127.0.0.1:5000"}).labValues(cluster)
	values["global"].(map[string]any)["clusterName"] = cluster
	values["global"].(map[string]any)["remotes"] = remotes
	values["wireguard"].(map[string]any)["listenPorts"] = ports
	rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), layout.UmbrellaRelease, layout.SemaphoreNamespace, values)
	if err != nil {
		t.Fatalf("%s: %v", cluster, err)
	}
	return rel.Manifest
}

// The lab's values give every controller the per-remote limits the hostile remote goes over:
// HostileMirrorCap mirrors and as many WireGuard peers as a remote has nodes.
func TestUmbrellaValuesSetTheLimitsTheHostileRemoteGoesOver(t *testing.T) {
	manifest := renderUmbrella(t, layout.HostileConsumer)
	for env, want := range map[string]int{"SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE": layout.HostileMirrorCap, "SEMAPHORE_WG_MAX_PEERS_PER_REMOTE": layout.NodesPerCluster} {
		if !strings.Contains(manifest, "name: "+env+"\n              value: \""+strconv.Itoa(want)+"\"") {
			t.Errorf("%s is not %d", env, want)
		}
	}
}
