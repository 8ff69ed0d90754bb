//go:build linux

package app_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// The tests that create devices run as root in network and mount namespaces of their own,
// with API servers started inside them (reachable on that namespace's loopback). Without root
// they skip; TestBadConfiguration runs either way.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunInNamespaces(m, testenv.PrepareAPIServers))
}

// scene is what the tests start from: the local cluster gcp with this node, gcp-node-1; the
// remote aws, its kubeconfig in a remotes directory; a key directory; and a device manager
// that stands in for the host's kernel devices (see TestRemoteRemovalCleansUpAtNextStart),
// which the test keeps open.
type scene struct {
	gcp, aws *testenv.Cluster
	keyDir   string
	log      *slog.Logger
	host     *device.Manager
	// env is the component's environment for reading aws into gcp, userspace devices.
	env map[string]string
}

// newScene starts the scene; the local node carries annotations, the devices host makes log as
// owner.
func newScene(t *testing.T, annotations map[string]string, owner string) *scene {
	t.Helper()
	testenv.RequireNamespaces(t)
	clusters := testenv.Start(t, testenv.Options{}, "gcp", "aws")
	s := &scene{gcp: clusters[0], aws: clusters[1], keyDir: t.TempDir()}
	peerstest.CreateNode(t, s.gcp.Client, "gcp-node-1", "192.0.2.21", annotations)
	remotesDir := t.TempDir()
	testenv.WriteRemoteKubeconfig(t, remotesDir, "aws", s.aws.DirectKubeconfig)
	s.log = slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil))
	var err error
	if s.host, err = device.NewManager(device.ModeUserspace, s.log.With("owner", owner)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.host.Close() })
	s.env = map[string]string{
		"SEMAPHORE_LOCAL_CLUSTER":    "gcp",
		"SEMAPHORE_REMOTES":          "aws",
		"SEMAPHORE_REMOTES_DIR":      remotesDir,
		"SEMAPHORE_LOCAL_KUBECONFIG": s.gcp.DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR":       "127.0.0.1:0",
		"SEMAPHORE_WG_NODE_NAME":     "gcp-node-1",
		"SEMAPHORE_WG_KEY_DIR":       s.keyDir,
		"SEMAPHORE_WG_LISTEN_PORTS":  "aws:51821",
		"SEMAPHORE_WG_MODE":          "userspace",
	}
	return s
}

// remoteNode creates a node of aws at address ip, with podCIDR, that publishes key to gcp.
func (s *scene) remoteNode(t *testing.T, name, ip string, key wgtypes.Key, podCIDR string) {
	t.Helper()
	peerstest.CreateNode(t, s.aws.Client, name, ip, peerstest.Annotations("gcp", key.PublicKey(), ip+":51821"), podCIDR)
}

// keyedDevice makes device name on the host, listening on port, with its key file in the key
// directory (as an agent leaves them), and returns its key.
func (s *scene) keyedDevice(t *testing.T, name string, port int) wgtypes.Key {
	t.Helper()
	key, _, err := device.LoadOrCreateKey(s.keyDir, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.host.Ensure(name, key, port, 1420); err != nil {
		t.Fatal(err)
	}
	return key
}

// keyFile is nil when the key directory holds the key file of device name.
func (s *scene) keyFile(name string) error {
	_, err := os.Stat(filepath.Join(s.keyDir, name+".key"))
	return err
}

// localNode reads gcp-node-1.
func (s *scene) localNode() (*corev1.Node, error) {
	return s.gcp.Client.CoreV1().Nodes().Get(context.Background(), "gcp-node-1", metav1.GetOptions{})
}

// running is a started app.WireGuard.
type running struct {
	app    daemon.App
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
	a, err := daemon.Build(cfg, log, app.New, app.NewUninstalling)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{app: a, cancel: cancel, done: make(chan error, 1)}
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
