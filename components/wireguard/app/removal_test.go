//go:build linux

package app_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// On shutdown the devices stay; a remote removed from the configuration has
// its device, routes, key and annotations removed at the next start.
//
// What is testable here, without kernel WireGuard: a kernel device outlives the process that
// configured it, a userspace one dies with it (device.Manager.Close stops it, by design). So
// the device stands in for a kernel one by being created by a device.Manager that this test
// keeps open, with the key the component would have generated in its key directory (which is
// what makes a device "ours"). The component then finds it at start, configures its peers and
// routes, and must leave it as it is when it stops: that is "the devices stay on shutdown", as
// far as the component's own code goes (no delete, no peer or route removal on the way out).
// That kernel links are never deleted by Manager.Close is the device package's business.
func TestRemoteRemovalCleansUpAtNextStart(t *testing.T) {
	const owner = "example.com/owner" // someone else's annotation on our node
	// The stand-in for kernel devices (see above), and a WireGuard device by our prefix that
	// the component did not create (no key file): it must survive everything.
	s := newScene(t, map[string]string{owner: "someone-else"}, "test")
	log, host := s.log, s.host
	k1, k2 := devicetest.Key(t), devicetest.Key(t)
	s.remoteNode(t, "aws-node-1", "192.0.2.11", k1, "198.18.11.0/24")
	s.remoteNode(t, "aws-node-2", "192.0.2.12", k2, "198.18.12.0/24")

	dev := peers.DeviceName("aws")
	devKey := s.keyedDevice(t, dev, 51821)
	const foreign = "wg-manual"
	if err := host.Ensure(foreign, devicetest.Key(t), 51899, 1420); err != nil {
		t.Fatal(err)
	}
	foreignPeer := devicetest.Key(t).PublicKey()
	if err := host.ConfigurePeers(foreign, []wgtypes.PeerConfig{{PublicKey: foreignPeer}}); err != nil {
		t.Fatal(err)
	}

	env := s.env
	env["SEMAPHORE_REMOTE_PROBE_INTERVAL"] = "1s"

	// First start, with remote aws: peers, routes and annotations.
	first := runApp(t, env, log.With("run", "first"))
	wantPeers := []string{k1.PublicKey().String(), k2.PublicKey().String()}
	slices.Sort(wantPeers)
	wantRoutes := []string{"198.18.11.0/24", "198.18.12.0/24"}
	configured := func() error {
		got, err := peerKeys(host, dev)
		if err != nil {
			return err
		}
		if !slices.Equal(got, wantPeers) {
			return fmt.Errorf("peers of %s: %v, want %v", dev, got, wantPeers)
		}
		if got, err = ourRoutes(host, dev); err != nil {
			return err
		}
		if !slices.Equal(got, wantRoutes) {
			return fmt.Errorf("routes of %s: %v, want %v", dev, got, wantRoutes)
		}
		return nil
	}
	annotated := func() error {
		n, err := s.localNode()
		if err != nil {
			return err
		}
		if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != devKey.PublicKey().String() {
			return fmt.Errorf("pubKey annotation %q, want %q", got, devKey.PublicKey())
		}
		if got := n.Annotations[peers.EndpointAnnotation("aws")]; got != "192.0.2.21:51821" {
			return fmt.Errorf("endpoint annotation %q", got)
		}
		return nil
	}
	testenv.Eventually(t, 30*time.Second, "first start configures the device", configured)
	testenv.Eventually(t, 10*time.Second, "first start annotates the node", annotated)

	// Shutdown: the device keeps its peers and routes, the node its annotations, the key its file.
	first.stop(t)
	if err := configured(); err != nil {
		t.Errorf("after shutdown: %v", err)
	}
	if err := annotated(); err != nil {
		t.Errorf("after shutdown: %v", err)
	}
	if err := s.keyFile(dev); err != nil {
		t.Errorf("after shutdown: key file: %v", err)
	}

	// Next start without remotes: aws's device, routes, key file and annotations go; nothing
	// else is touched.
	env["SEMAPHORE_REMOTES"] = ""
	env["SEMAPHORE_WG_LISTEN_PORTS"] = ""
	second := runApp(t, env, log.With("run", "second"))
	testenv.Eventually(t, 30*time.Second, "second start removes what belonged to aws", func() error {
		return s.removed(dev, "aws", owner)
	})
	if got, err := host.Devices(peers.DevicePrefix); err != nil || !slices.Equal(got, []string{foreign}) {
		t.Errorf("devices %v (err %v), want only %s, which is not ours", got, err, foreign)
	}
	if got, err := peerKeys(host, foreign); err != nil || !slices.Equal(got, []string{foreignPeer.String()}) {
		t.Errorf("peers of %s: %v (err %v), want it untouched", foreign, got, err)
	}
	second.stop(t)
}

// removed is nil once remote's device dev, its routes, its key file and the node's annotations
// for it are gone, and the annotation of owner is still there.
func (s *scene) removed(dev, remote, owner string) error {
	var notFound netlink.LinkNotFoundError
	if _, err := netlink.LinkByName(dev); err == nil {
		return fmt.Errorf("link %s still there", dev)
	} else if !errors.As(err, &notFound) {
		return err
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: device.RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return err
	}
	if len(routes) > 0 {
		return fmt.Errorf("routes marked as ours still there: %v", routes)
	}
	if err := s.keyFile(dev); err == nil {
		return fmt.Errorf("key file of %s still there", dev)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	n, err := s.localNode()
	if err != nil {
		return err
	}
	for _, k := range []string{peers.PubKeyAnnotation(remote), peers.EndpointAnnotation(remote), peers.PathMTUAnnotation(remote)} {
		if v, ok := n.Annotations[k]; ok {
			return fmt.Errorf("annotation %s=%q still there", k, v)
		}
	}
	if n.Annotations[owner] != "someone-else" {
		return fmt.Errorf("someone else's annotation was touched: %v", n.Annotations)
	}
	return nil
}
