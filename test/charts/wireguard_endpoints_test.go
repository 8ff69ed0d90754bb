package charts_test

import (
	"fmt"
	"strings"
	"testing"

	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
)

// endpointRanges, a map {<remote>: [CIDR, ...]}, becomes SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES and
// maxPeersPerRemote SEMAPHORE_WG_MAX_PEERS_PER_REMOTE, which the binary decodes into the ranges
// and the limit of each remote: through the umbrella (wireguard.endpointRanges) and with the
// subchart alone. A limit under 1 and a range that is not a CIDR are refused before anything is
// installed.
func TestWireGuardEndpointRangesAndPeerLimit(t *testing.T) {
	tests := []struct {
		name string
		// values are the wireguard values in YAML, besides listenPorts.
		values     []string
		wantEnv    string // SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES; "" is unset
		wantRanges string // the decoded ranges, as addrguard.Ranges prints them
		wantMax    int
		// refused: a string the render's error must name; the render must then fail.
		refused string
	}{
		{name: "defaults", wantMax: 5000},
		{
			// In the order of global.remotes, not the map's; gcp (this cluster) is not a remote.
			name:       "ranges of every remote and this cluster",
			values:     []string{`endpointRanges: {merit: [203.0.113.0/24, "2001:db8:30::/48"], gcp: [198.51.100.0/24], aws: [192.0.2.0/25]}`},
			wantEnv:    "aws:192.0.2.0/25,merit:203.0.113.0/24,merit:2001:db8:30::/48",
			wantRanges: "aws:192.0.2.0/25,merit:203.0.113.0/24,merit:2001:db8:30::/48",
			wantMax:    5000,
		},
		{name: "ranges of no remote", values: []string{"endpointRanges: {azure: [198.51.100.0/24]}"}, wantMax: 5000},
		{name: "a remote without ranges", values: []string{"endpointRanges: {aws: []}"}, wantMax: 5000},
		{name: "a limit", values: []string{"maxPeersPerRemote: 20000"}, wantMax: 20000},
		{name: "a limit of one", values: []string{"maxPeersPerRemote: 1"}, wantMax: 1},
		{name: "no peers at all", values: []string{"maxPeersPerRemote: 0"}, refused: "maxPeersPerRemote"},
		{name: "a limit that is not a number", values: []string{"maxPeersPerRemote: many"}, refused: "maxPeersPerRemote"},
		{name: "a range that is not a CIDR", values: []string{"endpointRanges: {aws: [203.0.113.7]}"}, refused: "endpointRanges"},
		{name: "ranges that are not a list", values: []string{"endpointRanges: {aws: 203.0.113.0/24}"}, refused: "endpointRanges"},
	}
	for _, tt := range tests {
		eachWireGuardChart(t, tt.name, tt.values, func(t *testing.T, dir string, _ bool, vals map[string]any) {
			if tt.refused != "" {
				_, err := render(t, dir, releaseName, releaseNamespace, vals)
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Errorf("render error %v, want one naming %s", err, tt.refused)
				}
				return
			}
			m := mustRender(t, dir, vals)
			w, err := m.Workload("wireguard")
			if err != nil {
				t.Fatal(err)
			}
			c := mainContainer(t, w)
			if got := envValue(c, "SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES", ""); got != tt.wantEnv {
				t.Errorf("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES=%q, want %q", got, tt.wantEnv)
			}
			if got, want := envValue(c, "SEMAPHORE_WG_MAX_PEERS_PER_REMOTE", "<unset>"), fmt.Sprint(tt.wantMax); got != want {
				t.Errorf("SEMAPHORE_WG_MAX_PEERS_PER_REMOTE=%q, want %q", got, want)
			}
			cfg, err := loadConfig(t, "wireguard", podEnv(t, w, c, releaseNamespace, w.Name+"-abcde", "node-1"))
			if err != nil {
				t.Fatalf("the component does not start with the rendered environment: %v", err)
			}
			wg := cfg.(*wgapp.Config)
			if got := wg.EndpointRanges.String(); got != tt.wantRanges {
				t.Errorf("endpoint ranges %q, want %q", got, tt.wantRanges)
			}
			if wg.MaxPeers != tt.wantMax {
				t.Errorf("peer limit %d, want %d", wg.MaxPeers, tt.wantMax)
			}
		})
	}
}
