package env

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/helmchart"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// renderUmbrella renders the umbrella chart with the values the lab gives cluster once
// kubectl semaphore link has linked it to its remotes.
func renderUmbrella(t *testing.T, cluster string) string {
	t.Helper()
	l := &Lab{registry: "127.0.0.1:5000", remoteEntries: map[string][]remoteEntry{}}
	for _, r := range RemotesOf(cluster) {
		// As kubectl semaphore link writes it.
		l.remoteEntries[cluster] = append(l.remoteEntries[cluster], remoteEntry{
			"name": r, "server": "https://127.0.0.1:6443", "caData": "Q0EK",
			"tokenSecret": map[string]any{"name": "semaphore-remote-" + r, "key": "token"},
		})
	}
	rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), UmbrellaRelease, SemaphoreNamespace, l.umbrellaValues(cluster))
	if err != nil {
		t.Fatalf("%s: %v", cluster, err)
	}
	return rel.Manifest
}

// The umbrella values the lab gives gcp and merit make their semaphore-wireguard read aws's
// pod addresses from its IPAM blocks, and leave the others to their Nodes; every cluster holds
// each remote to that remote's pod range.
func TestUmbrellaValuesReadCalicoIPAM(t *testing.T) {
	for cluster, want := range map[string]string{"gcp": "aws:calico-ipam", "merit": "aws:calico-ipam", "aws": "node"} {
		manifest := renderUmbrella(t, cluster)
		if !strings.Contains(manifest, "name: SEMAPHORE_WG_POD_CIDRS_FROM\n              value: \""+want+"\"") {
			t.Errorf("%s: SEMAPHORE_WG_POD_CIDRS_FROM is not %q:\n%s", cluster, want, manifest)
		}
		var ranges []string
		for _, r := range RemotesOf(cluster) {
			ranges = append(ranges, r+":"+SpecOf(r).PodCIDR)
		}
		if want := strings.Join(ranges, ","); !strings.Contains(manifest, "name: SEMAPHORE_REMOTE_POD_RANGES\n              value: \""+want+"\"") {
			t.Errorf("%s: SEMAPHORE_REMOTE_POD_RANGES is not %q", cluster, want)
		}
	}
}

// The lab's values give every controller the per-remote limits the hostile remote goes over:
// HostileMirrorCap mirrors and as many WireGuard peers as a remote has nodes.
func TestUmbrellaValuesSetTheLimitsTheHostileRemoteGoesOver(t *testing.T) {
	manifest := renderUmbrella(t, HostileConsumer)
	for env, want := range map[string]int{"SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE": HostileMirrorCap, "SEMAPHORE_WG_MAX_PEERS_PER_REMOTE": NodesPerCluster} {
		if !strings.Contains(manifest, "name: "+env+"\n              value: \""+strconv.Itoa(want)+"\"") {
			t.Errorf("%s is not %d", env, want)
		}
	}
}
