//go:build linux

package app_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Migrating from the original semaphore-wireguard: its device wireguard.aws (here a userspace
// stand-in for its kernel device, see TestRemoteRemovalCleansUpAtNextStart) routes aws's pod
// range, and its key is in the shared key directory as wireguard.aws.key. With
// SEMAPHORE_ADOPT_ORIGINAL our component takes that key for wg-aws, so the node's published
// public key does not change and aws's nodes keep their sessions, deletes the original's device
// (its route goes with it) and its key file, and leaves the original's device of a cluster it
// does not read alone.
func TestReplacesTheOriginalsDevices(t *testing.T) {
	s := newScene(t, nil, "original")
	remoteKey := devicetest.Key(t)
	s.remoteNode(t, "aws-node-1", "192.0.2.11", remoteKey, "198.18.11.0/24")
	host := s.host
	// The original's key file is what it wrote: base64, mode 0600, <dir>/wireguard.<remote>.key.
	// Another port than ours: the stand-in's socket lives in this process until it ends,
	// where a kernel device's goes with the device.
	originalKey := s.keyedDevice(t, "wireguard.aws", 51831)
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

	env := s.env
	env["SEMAPHORE_ADOPT_ORIGINAL"] = "true"
	runApp(t, env, s.log.With("run", "ours"))

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
		n, err := s.localNode()
		if err != nil {
			return err
		}
		if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != originalKey.PublicKey().String() {
			return fmt.Errorf("published public key %q, want the original's %q", got, originalKey.PublicKey())
		}
		return nil
	})
	if err := s.keyFile("wireguard.aws"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the original's key file: %v, want it removed (ours holds the key)", err)
	}
	if got, err := host.Devices("wireguard."); err != nil || !slices.Equal(got, []string{"wireguard.merit"}) {
		t.Errorf("the original's devices left: %v (%v), want wireguard.merit only (merit is not ours)", got, err)
	}
}
