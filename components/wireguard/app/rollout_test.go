//go:build linux

package app_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A rollout starts the next agent beside the running one (a surge). The next one stands by,
// ready, leaving the devices to the running one; when that one stops, the next takes its
// userspace device over, the same link with its routes, and sets the peers.
func TestSurgedSuccessorStandsByAndTakesTheDevicesOver(t *testing.T) {
	s := newScene(t, nil, "test")
	k1 := devicetest.Key(t)
	s.remoteNode(t, "aws-node-1", "192.0.2.11", k1, "198.18.11.0/24")
	dev := peers.DeviceName("aws")
	configured := func() error {
		got, err := peerKeys(s.host, dev)
		if err != nil {
			return err
		}
		if want := []string{k1.PublicKey().String()}; !slices.Equal(got, want) {
			return fmt.Errorf("peers of %s: %v, want %v", dev, got, want)
		}
		if got, err = ourRoutes(s.host, dev); err != nil || !slices.Equal(got, []string{"198.18.11.0/24"}) {
			return fmt.Errorf("routes of %s: %v (%w)", dev, got, err)
		}
		return nil
	}

	old := runApp(t, s.env, s.log.With("run", "old"))
	testenv.Eventually(t, 30*time.Second, "the old agent configures its device", configured)
	link, err := netlink.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}

	nextLog := &testenv.Buffer{}
	next := runApp(t, s.env, slog.New(slog.NewTextHandler(io.MultiWriter(testenv.LogWriter(t), nextLog), nil)).With("run", "next"))
	testenv.Eventually(t, 30*time.Second, "the next agent stands by, ready", func() error {
		if !strings.Contains(nextLog.String(), "standing by") {
			return fmt.Errorf("no standing by in its log")
		}
		return ready(adminAddr(next))
	})
	if err := configured(); err != nil {
		t.Errorf("while the next agent stands by: %v", err)
	}
	if exports, err := exportsPeers(adminAddr(next)); err != nil || exports {
		t.Errorf("while the next agent stands by, it exports the old one's device statistics (%v)", err)
	}

	old.stop(t)
	testenv.Eventually(t, 30*time.Second, "the next agent takes the device over", configured)
	if got, err := netlink.LinkByName(dev); err != nil || got.Attrs().Index != link.Attrs().Index {
		t.Errorf("link after the takeover: %v (%v), want the old one, index %d", got, err, link.Attrs().Index)
	}
	if err := ready(adminAddr(next)); err != nil {
		t.Errorf("after the takeover: %v", err)
	}
	if exports, err := exportsPeers(adminAddr(next)); err != nil || !exports {
		t.Errorf("after the takeover, the next agent exports no device statistics (%v)", err)
	}
}

// exportsPeers reports whether the admin server at addr exports semaphore_wg_peers, the
// statistics read from the devices.
func exportsPeers(addr string) (bool, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return strings.Contains(string(body), "\nsemaphore_wg_peers{"), err
}

func adminAddr(r *running) string {
	return r.app.(interface{ AdminAddr() string }).AdminAddr()
}

// ready is nil when the admin server at addr answers /readyz with 200.
func ready(addr string) error {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz %d: %s", resp.StatusCode, body)
	}
	return nil
}
