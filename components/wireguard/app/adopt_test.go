//go:build linux

package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// Migrating from the original semaphore-wireguard: its device wireguard.aws (here a userspace
// stand-in for its kernel device, see TestRemoteRemovalCleansUpAtNextStart) routes aws's pod
// range, and its key is in the shared key directory as wireguard.aws.key. With
// SEMAPHORE_ADOPT_ORIGINAL our component takes that key for wg-aws, so the node's published
// public key does not change and aws's nodes keep their sessions, deletes the original's device
// (its route goes with it) and its key file, and leaves the original's device of a cluster it
// does not read alone.
func TestReplacesTheOriginalsDevices(t *testing.T) {
	testenv.RequireNamespaces(t)
	clusters := testenv.Start(t, testenv.Options{}, "gcp", "aws")
	gcp, aws := clusters[0], clusters[1]
	ctx := context.Background()
	peerstest.CreateNode(t, gcp.Client, "gcp-node-1", "192.0.2.21", nil)
	remoteKey := devicetest.Key(t)
	peerstest.CreateNode(t, aws.Client, "aws-node-1", "192.0.2.11", peerstest.Annotations("gcp", remoteKey.PublicKey(), "192.0.2.11:51821"), "198.18.11.0/24")

	keyDir, remotesDir := t.TempDir(), t.TempDir()
	testenv.WriteRemoteKubeconfig(t, remotesDir, "aws", aws.DirectKubeconfig)
	log := slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil))
	host, err := device.NewManager(device.ModeUserspace, log.With("owner", "original"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })
	// The original's key file is what it wrote: base64, mode 0600, <dir>/wireguard.<remote>.key.
	originalKey, _, err := device.LoadOrCreateKey(keyDir, "wireguard.aws")
	if err != nil {
		t.Fatal(err)
	}
	// Another port than ours: the stand-in's socket lives in this process until it ends,
	// where a kernel device's goes with the device.
	if err := host.Ensure("wireguard.aws", originalKey, 51831, 1420); err != nil {
		t.Fatal(err)
	}
	if err := host.Ensure("wireguard.merit", devicetest.Key(t), 51832, 1420); err != nil {
		t.Fatal(err)
	}
	link, err := netlink.LinkByName("wireguard.aws")
	if err != nil {
		t.Fatal(err)
	}
	_, podRange, _ := net.ParseCIDR("198.18.0.0/16")
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: podRange, Scope: netlink.SCOPE_LINK}); err != nil {
		t.Fatal(err)
	}

	runApp(t, map[string]string{
		"SEMAPHORE_LOCAL_CLUSTER":    "gcp",
		"SEMAPHORE_REMOTES":          "aws",
		"SEMAPHORE_REMOTES_DIR":      remotesDir,
		"SEMAPHORE_LOCAL_KUBECONFIG": gcp.DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR":       "127.0.0.1:0",
		"SEMAPHORE_WG_NODE_NAME":     "gcp-node-1",
		"SEMAPHORE_WG_KEY_DIR":       keyDir,
		"SEMAPHORE_WG_LISTEN_PORTS":  "aws:51821",
		"SEMAPHORE_WG_MODE":          "userspace",
		"SEMAPHORE_ADOPT_ORIGINAL":   "true",
	}, log.With("run", "ours"))

	dev := peers.DeviceName("aws")
	testenv.Eventually(t, 30*time.Second, "ours replaces the original's device, with its key", func() error {
		var notFound netlink.LinkNotFoundError
		if _, err := netlink.LinkByName("wireguard.aws"); !errors.As(err, &notFound) {
			return fmt.Errorf("the original's device: %w", err)
		}
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: podRange}, netlink.RT_FILTER_DST)
		if err != nil {
			return err
		}
		if len(routes) > 0 {
			return fmt.Errorf("the original's route is still there: %v", routes)
		}
		if got, err := peerKeys(host, dev); err != nil || !slices.Equal(got, []string{remoteKey.PublicKey().String()}) {
			return fmt.Errorf("peers of %s: %v (%w)", dev, got, err)
		}
		n, err := gcp.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != originalKey.PublicKey().String() {
			return fmt.Errorf("published public key %q, want the original's %q", got, originalKey.PublicKey())
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(keyDir, "wireguard.aws.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the original's key file: %v, want it removed (ours holds the key)", err)
	}
	if got, err := host.Devices("wireguard."); err != nil || !slices.Equal(got, []string{"wireguard.merit"}) {
		t.Errorf("the original's devices left: %v (%v), want wireguard.merit only (merit is not ours)", got, err)
	}
}
