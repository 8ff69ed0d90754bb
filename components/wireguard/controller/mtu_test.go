package controller_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// mtuNode is an aws node that publishes pathMTU ("" for none) next to its key and endpoint.
func mtuNode(t *testing.T, name, endpoint, pathMTU, podCIDR string) {
	t.Helper()
	annotations := peerstest.Annotations("gcp", devicetest.Key(t).PublicKey(), endpoint)
	if pathMTU != "" {
		annotations[peers.PathMTUAnnotation("gcp")] = pathMTU
	}
	peerstest.CreateNode(t, aws.Client, name, endpointAddress(endpoint), annotations, podCIDR)
}

// expectMTU waits until wg-aws has MTU device and the metrics read device and path.
func expectMTU(t *testing.T, r *running, devs *devicetest.Devices, what string, device, path int) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, func() error {
		got, err := devs.MTU("wg-aws")
		if err != nil {
			return err
		}
		gotDevice, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_device_mtu", map[string]string{"remote": "aws"})
		gotPath, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_path_mtu", map[string]string{"remote": "aws"})
		if got != device || gotDevice != float64(device) || gotPath != float64(path) {
			return fmt.Errorf("device MTU %d, device_mtu %v, path_mtu %v; want %d, %d", got, gotDevice, gotPath, device, path)
		}
		return nil
	})
}

// auto: before any peer the device follows the default route; then the route toward the
// peers' endpoints, and never above the smallest path MTU a peer publishes, less 60 bytes to
// IPv4 endpoints and 80 once one is IPv6. A path MTU a peer publishes below 1280 is ignored
// and counted. The node publishes its own path MTU toward the remote.
func TestAutoMTUFollowsThePathBothWays(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	devs := devicetest.New()
	devs.SetPathMTU(netip.MustParsePrefix("0.0.0.0/0"), 9001)
	devs.SetPathMTU(netip.MustParsePrefix("192.0.2.0/24"), 1500)
	r := start(t, devs, devicetest.Key(t))
	expectMTU(t, r, devs, "no peer: the default route", 9001-60, 9001)
	if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_device_info", map[string]string{"remote": "aws", "device": "wg-aws", "implementation": "userspace"}); v != 1 {
		t.Errorf("device_info = %v, want 1", v)
	}

	mtuNode(t, "aws-mtu-1", "192.0.2.71:51822", "", "198.18.71.0/24")
	expectMTU(t, r, devs, "the route toward the peer", 1500-60, 1500)
	expectLocalAnnotations(t, "own path MTU published", map[string]string{peers.PathMTUAnnotation("aws"): "1500"})

	mtuNode(t, "aws-mtu-2", "192.0.2.72:51822", "1460", "198.18.72.0/24")
	expectMTU(t, r, devs, "a peer's smaller path", 1460-60, 1460)
	mtuNode(t, "aws-mtu-3", "192.0.2.73:51822", "576", "198.18.73.0/24")
	testenv.Eventually(t, 20*time.Second, "a path MTU below 1280 counted", func() error {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peers_with_invalid_path_mtu", map[string]string{"remote": "aws"}); v != 1 {
			return fmt.Errorf("peers_with_invalid_path_mtu = %v", v)
		}
		return nil
	})
	expectMTU(t, r, devs, "a path MTU below 1280 ignored", 1460-60, 1460)
	expectLocalAnnotations(t, "own path MTU unchanged by the peers'", map[string]string{peers.PathMTUAnnotation("aws"): "1500"})

	mtuNode(t, "aws-mtu-4", "[fd00::74]:51822", "", "198.18.74.0/24")
	expectMTU(t, r, devs, "an IPv6 endpoint", 1460-80, 1460)
	if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peers_without_handshake", map[string]string{"remote": "aws"}); v != 0 {
		t.Errorf("peers_without_handshake = %v, want 0 within the grace period", v)
	}
}

// A fixed MTU for a remote is its device's whatever the path; the path is still measured,
// published and reported.
func TestFixedMTUIsKeptWhateverThePath(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	var settings mtu.Settings
	if err := settings.Decode("aws:1380,auto"); err != nil {
		t.Fatal(err)
	}
	devs := devicetest.New()
	r := startWith(t, devs, devicetest.Key(t), controller.Options{MTU: settings})
	expectMTU(t, r, devs, "the fixed MTU from the start", 1380, devicetest.DefaultPathMTU)
	mtuNode(t, "aws-mtu-5", "192.0.2.75:51822", "1460", "198.18.75.0/24")
	expectMTU(t, r, devs, "the fixed MTU with a smaller path", 1380, 1460)
	expectLocalAnnotations(t, "own path MTU published", map[string]string{peers.PathMTUAnnotation("aws"): fmt.Sprint(devicetest.DefaultPathMTU)})
}
