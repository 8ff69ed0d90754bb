//go:build linux

package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// The tests that create devices run as root in network and mount namespaces of their own,
// with API servers started inside them (reachable on that namespace's loopback). Without root
// they skip; TestBadConfiguration runs either way.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunInNamespaces(m, testenv.PrepareAPIServers))
}

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
	testenv.RequireNamespaces(t)
	clusters := testenv.Start(t, testenv.Options{}, "gcp", "aws")
	gcp, aws := clusters[0], clusters[1]
	ctx := context.Background()

	const owner = "example.com/owner" // someone else's annotation on our node
	peerstest.CreateNode(t, gcp.Client, "gcp-node-1", "192.0.2.21", map[string]string{owner: "someone-else"})
	k1, k2 := devicetest.Key(t), devicetest.Key(t)
	peerstest.CreateNode(t, aws.Client, "aws-node-1", "192.0.2.11", peerstest.Annotations("gcp", k1.PublicKey(), "192.0.2.11:51821"), "198.18.11.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-node-2", "192.0.2.12", peerstest.Annotations("gcp", k2.PublicKey(), "192.0.2.12:51821"), "198.18.12.0/24")

	keyDir := t.TempDir()
	remotesDir := t.TempDir()
	testenv.WriteRemoteKubeconfig(t, remotesDir, "aws", aws.DirectKubeconfig)
	log := slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil))

	// The stand-in for kernel devices (see above), and a WireGuard device by our prefix that
	// the component did not create (no key file): it must survive everything.
	host, err := device.NewManager(device.ModeUserspace, log.With("owner", "test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })
	dev := peers.DeviceName("aws")
	devKey, _, err := device.LoadOrCreateKey(keyDir, dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Ensure(dev, devKey, 51821, 1420); err != nil {
		t.Fatal(err)
	}
	const foreign = "wg-manual"
	if err := host.Ensure(foreign, devicetest.Key(t), 51899, 1420); err != nil {
		t.Fatal(err)
	}
	foreignPeer := devicetest.Key(t).PublicKey()
	if err := host.ConfigurePeers(foreign, []wgtypes.PeerConfig{{PublicKey: foreignPeer}}); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{
		"SEMAPHORE_LOCAL_CLUSTER":         "gcp",
		"SEMAPHORE_REMOTES":               "aws",
		"SEMAPHORE_REMOTES_DIR":           remotesDir,
		"SEMAPHORE_LOCAL_KUBECONFIG":      gcp.DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR":            "127.0.0.1:0",
		"SEMAPHORE_REMOTE_PROBE_INTERVAL": "1s",
		"SEMAPHORE_WG_NODE_NAME":          "gcp-node-1",
		"SEMAPHORE_WG_KEY_DIR":            keyDir,
		"SEMAPHORE_WG_LISTEN_PORTS":       "aws:51821",
		"SEMAPHORE_WG_MODE":               "userspace",
	}

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
		n, err := gcp.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
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
	keyFile := filepath.Join(keyDir, dev+".key")
	if _, err := os.Stat(keyFile); err != nil {
		t.Errorf("after shutdown: key file: %v", err)
	}

	// Next start without remotes: aws's device, routes, key file and annotations go; nothing
	// else is touched.
	env["SEMAPHORE_REMOTES"] = ""
	env["SEMAPHORE_WG_LISTEN_PORTS"] = ""
	second := runApp(t, env, log.With("run", "second"))
	testenv.Eventually(t, 30*time.Second, "second start removes what belonged to aws", func() error {
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
		if _, err := os.Stat(keyFile); err == nil {
			return fmt.Errorf("key file %s still there", keyFile)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		n, err := gcp.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, k := range []string{peers.PubKeyAnnotation("aws"), peers.EndpointAnnotation("aws")} {
			if v, ok := n.Annotations[k]; ok {
				return fmt.Errorf("annotation %s=%q still there", k, v)
			}
		}
		if n.Annotations[owner] != "someone-else" {
			return fmt.Errorf("someone else's annotation was touched: %v", n.Annotations)
		}
		return nil
	})
	if got, err := host.Devices(peers.DevicePrefix); err != nil || !slices.Equal(got, []string{foreign}) {
		t.Errorf("devices %v (err %v), want only %s, which is not ours", got, err, foreign)
	}
	if got, err := peerKeys(host, foreign); err != nil || !slices.Equal(got, []string{foreignPeer.String()}) {
		t.Errorf("peers of %s: %v (err %v), want it untouched", foreign, got, err)
	}
	second.stop(t)
}

// running is a started app.App.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// runApp loads the configuration from env, as the binary does, and runs the component.
func runApp(t *testing.T, env map[string]string, log *slog.Logger) *running {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var cfg app.Config
	if err := config.Load(nil, io.Discard, &cfg); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the component and fails the test if it did not end cleanly.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context ending")
	}
}

// peerKeys returns the public keys of the peers of device name, sorted.
func peerKeys(m *device.Manager, name string) ([]string, error) {
	ps, err := m.Peers(name)
	return sortedStrings(len(ps), func(i int) string { return ps[i].PublicKey.String() }), err
}

// ourRoutes returns the routes via device name that carry our marker, sorted.
func ourRoutes(m *device.Manager, name string) ([]string, error) {
	rs, err := m.OurRoutes(name)
	return sortedStrings(len(rs), func(i int) string { return rs[i].String() }), err
}

// sortedStrings returns str(i) for each i from 0 to n-1, sorted.
func sortedStrings(n int, str func(i int) string) []string {
	var out []string
	for i := range n {
		out = append(out, str(i))
	}
	slices.Sort(out)
	return out
}
