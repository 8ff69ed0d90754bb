package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/controller/controllertest"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

var (
	local *testenv.Cluster
	aws   *testenv.Cluster
)

// TestMain starts the clusters every test but the pure ones (Sources) needs; those run alone under
// -short, where the others skip (needClusters).
func TestMain(m *testing.M) {
	if testenv.Short() {
		os.Exit(m.Run())
	}
	os.Exit(func() int {
		var errs [2]error
		var wg sync.WaitGroup
		wg.Go(func() { local, errs[0] = testenv.StartCluster("gcp", testenv.Options{}) })
		crds := testenv.CRDs("wireguard")
		wg.Go(func() { aws, errs[1] = testenv.StartCluster("aws", testenv.Options{CRDDirs: []string{crds}}) })
		wg.Wait()
		for _, c := range []*testenv.Cluster{local, aws} {
			if c != nil {
				defer c.Stop()
			}
		}
		for _, err := range errs {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}())
}

// needClusters skips a test that uses the clusters under -short, where TestMain starts none.
func needClusters(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
}

// annotate sets annotation key of node name in c to value.
func annotate(t *testing.T, c *testenv.Cluster, name, key, value string) {
	t.Helper()
	ctx := context.Background()
	n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations[key] = value
	if _, err := c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// remoteNode is an aws node running semaphore-wireguard for gcp, whose endpoint's address is
// its InternalIP.
func remoteNode(t *testing.T, name string, pub wgtypes.Key, endpoint string, podCIDRs ...string) {
	peerstest.CreateNode(t, aws.Client, name, endpointAddress(endpoint), peerstest.Annotations("gcp", pub, endpoint), podCIDRs...)
}

// endpointAddress is the address of endpoint, or "" when it is not address:port.
func endpointAddress(endpoint string) string {
	if ap, err := netip.ParseAddrPort(endpoint); err == nil {
		return ap.Addr().String()
	}
	return ""
}

type running = controllertest.Running

// start runs a controller for node gcp-node-1 of gcp with remote aws, on fake devices.
func start(t *testing.T, devs *devicetest.Devices, devKey wgtypes.Key) *running {
	t.Helper()
	return startReading(t, devs, devKey, controller.Sources{})
}

// startReading is start with aws's pod addresses read from sources.
func startReading(t *testing.T, devs *devicetest.Devices, devKey wgtypes.Key, sources controller.Sources) *running {
	t.Helper()
	return startWith(t, devs, devKey, controller.Options{PodCIDRsFrom: sources})
}

// startWith is start with opts; the cluster, node and keepalive are start's.
func startWith(t *testing.T, devs *devicetest.Devices, devKey wgtypes.Key, opts controller.Options) *running {
	t.Helper()
	return startThrough(t, devs, devKey, opts, nil)
}

// startThrough is startWith with aws's API server reached through wrap, when not nil: what the
// controller reads of aws, wrap may change.
func startThrough(t *testing.T, devs *devicetest.Devices, devKey wgtypes.Key, opts controller.Options, wrap transport.WrapperFunc) *running {
	t.Helper()
	opts.LocalCluster, opts.NodeName, opts.Keepalive = "gcp", "gcp-node-1", 25*time.Second
	log := slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil))
	remotes := controllertest.Remotes(t, remote.ClientOptions{UserAgent: "semaphore-wireguard", QPS: 100, Burst: 200}, map[string]string{aws.Name: aws.Kubeconfig})
	if wrap != nil {
		cfg := rest.CopyConfig(remotes[0].Config)
		cfg.Wrap(wrap)
		remotes[0].Config, remotes[0].Client = cfg, kubernetes.NewForConfigOrDie(cfg)
	}
	r := controllertest.Start(t, controllertest.Config{
		Options: opts, Local: local.Client, Remotes: remotes,
		Device: controller.RemoteDevice{Remote: "aws", Device: "wg-aws", Key: devKey, ListenPort: 51821}, Devices: devs,
		ProbeInterval: 200 * time.Millisecond, Log: log,
	})
	t.Cleanup(r.Stop)
	return r
}

// expectNoReconfiguration waits for r's first successful sync and checks that the device was
// configured no more than configs times in all: a restart against an in-sync device changes
// nothing.
func expectNoReconfiguration(t *testing.T, r *running, devs *devicetest.Devices, configs int) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "restarted controller synced", func() error {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_reconcile_total", map[string]string{"remote": "aws", "result": "success"}); v < 1 {
			return fmt.Errorf("no successful reconcile yet")
		}
		return nil
	})
	if now := devs.Counts().Configs; now != configs {
		t.Errorf("restart reconfigured the in-sync device %d times", now-configs)
	}
}

// The controller publishes this node's key and endpoint for aws, configures one peer per
// annotated aws node with its pod CIDRs and routes them; a new node, a re-keyed node and a
// deleted node each change exactly that peer; bad annotations are skipped and counted while
// the other peers stay; a restart against an in-sync device changes nothing.
func TestPeersFollowRemoteNodes(t *testing.T) {
	needClusters(t)
	ctx := context.Background()
	// Left over from a remote no longer configured, next to someone else's annotation.
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", map[string]string{
		peers.PubKeyAnnotation("merit"):   "old",
		peers.EndpointAnnotation("merit"): "192.0.2.21:51829",
		"example.com/owner":               "someone-else",
	}, "198.18.21.0/24")
	devKey := devicetest.Key(t)
	k1, k2, k3 := devicetest.Key(t), devicetest.Key(t), devicetest.Key(t)
	remoteNode(t, "aws-node-1", k1.PublicKey(), "192.0.2.11:51822", "198.18.11.0/24")
	remoteNode(t, "aws-node-2", k2.PublicKey(), "192.0.2.12:51822", "198.18.12.0/24", "fd00:198:12::/64")
	peerstest.CreateNode(t, aws.Client, "aws-node-plain", "", nil, "198.18.19.0/24") // no semaphore-wireguard there

	devs := devicetest.New()
	r := start(t, devs, devKey)

	// Our node's annotations.
	testenv.Eventually(t, 10*time.Second, "node annotations", func() error {
		n, err := local.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != devKey.PublicKey().String() {
			return fmt.Errorf("pubKey annotation %q", got)
		}
		if got := n.Annotations[peers.EndpointAnnotation("aws")]; got != "192.0.2.21:51821" {
			return fmt.Errorf("endpoint annotation %q", got)
		}
		if _, ok := n.Annotations[peers.PubKeyAnnotation("merit")]; ok {
			return fmt.Errorf("annotations of remote merit, no longer configured, are still there: %v", n.Annotations)
		}
		if n.Annotations["example.com/owner"] != "someone-else" {
			return fmt.Errorf("someone else's annotation was touched: %v", n.Annotations)
		}
		return nil
	})
	expect := func(what string, want map[string]string, routes ...string) {
		t.Helper()
		sort.Strings(routes)
		testenv.Eventually(t, 30*time.Second, what, func() error {
			got, gotRoutes := devs.Endpoints("wg-aws"), devs.Routes("wg-aws")
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotRoutes) != fmt.Sprint(routes) {
				return fmt.Errorf("peers %v routes %v, want %v %v", got, gotRoutes, want, routes)
			}
			return nil
		})
	}
	expect("two peers", map[string]string{k1.PublicKey().String(): "192.0.2.11:51822", k2.PublicKey().String(): "192.0.2.12:51822"},
		"198.18.11.0/24", "198.18.12.0/24", "fd00:198:12::/64")
	ops := devs.Counts().PeerChanges

	remoteNode(t, "aws-node-3", k3.PublicKey(), "[fd00::13]:51822", "198.18.13.0/24")
	expect("new node", map[string]string{k1.PublicKey().String(): "192.0.2.11:51822", k2.PublicKey().String(): "192.0.2.12:51822", k3.PublicKey().String(): "[fd00::13]:51822"},
		"198.18.11.0/24", "198.18.12.0/24", "198.18.13.0/24", "fd00:198:12::/64")
	if now := devs.Counts().PeerChanges; now-ops != 1 {
		t.Errorf("a new node took %d peer operations, want 1", now-ops)
	}

	// Re-keyed node: its old peer goes, the new one comes; the others are untouched.
	ops = devs.Counts().PeerChanges
	k1b := devicetest.Key(t)
	annotate(t, aws, "aws-node-1", peers.PubKeyAnnotation("gcp"), k1b.PublicKey().String())
	expect("re-keyed node", map[string]string{k1b.PublicKey().String(): "192.0.2.11:51822", k2.PublicKey().String(): "192.0.2.12:51822", k3.PublicKey().String(): "[fd00::13]:51822"},
		"198.18.11.0/24", "198.18.12.0/24", "198.18.13.0/24", "fd00:198:12::/64")
	if now := devs.Counts().PeerChanges; now-ops != 2 {
		t.Errorf("re-keying one node took %d peer operations, want 2 (add the new key, remove the old)", now-ops)
	}

	// Bad annotations: skipped and counted; the others keep working.
	peerstest.CreateNode(t, aws.Client, "aws-bad-key", "", map[string]string{peers.PubKeyAnnotation("gcp"): "not-a-key", peers.EndpointAnnotation("gcp"): "192.0.2.14:51822"}, "198.18.14.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-bad-endpoint", "", map[string]string{peers.PubKeyAnnotation("gcp"): devicetest.Key(t).PublicKey().String(), peers.EndpointAnnotation("gcp"): "node-15:51822"}, "198.18.15.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-no-cidr", "192.0.2.16", map[string]string{peers.PubKeyAnnotation("gcp"): devicetest.Key(t).PublicKey().String(), peers.EndpointAnnotation("gcp"): "192.0.2.16:51822"})
	testenv.Eventually(t, 30*time.Second, "skipped peers counted", func() error {
		for _, reason := range []string{peers.ReasonBadKey, peers.ReasonBadEndpoint, peers.ReasonNoPodCIDR} {
			if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_peers", map[string]string{"remote": "aws", "reason": reason}); v != 1 {
				return fmt.Errorf("skipped_peers{reason=%s} = %v", reason, v)
			}
		}
		return nil
	})
	if got := devs.Endpoints("wg-aws"); len(got) != 3 {
		t.Errorf("bad nodes changed the peers: %v", got)
	}

	// A peer whose endpoint WireGuard moved (a NAT between the nodes, a roaming node) stays
	// there while its session lives when the device is synced again.
	devs.Roam("wg-aws", k2.PublicKey(), "203.0.113.7:40001")
	ops = devs.Counts().PeerChanges
	synced := func() float64 {
		v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_reconcile_total", map[string]string{"remote": "aws", "result": "success"})
		return v
	}
	before := synced()
	peerstest.CreateNode(t, aws.Client, "aws-unrelated", "", nil, "198.18.17.0/24") // any change of aws's nodes syncs wg-aws
	testenv.Eventually(t, 10*time.Second, "wg-aws synced again", func() error {
		if synced() <= before {
			return fmt.Errorf("no sync since the roam")
		}
		return nil
	})
	if got := devs.Endpoints("wg-aws"); got[k2.PublicKey().String()] != "203.0.113.7:40001" {
		t.Errorf("the roamed endpoint was set back: %v", got)
	}
	if now := devs.Counts().PeerChanges; now != ops {
		t.Errorf("a sync after a roam took %d peer operations, want 0", now-ops)
	}
	// Once the session at the roamed endpoint is over, the next sync (here for the node's new
	// address, an ExternalIP, published before its endpoint there) sets the published endpoint
	// again, once; a newly published endpoint is set, once.
	devs.Handshake("wg-aws", k2.PublicKey(), time.Now().Add(-peers.SessionLifetime-time.Minute))
	peerstest.SetAddresses(t, aws.Client, "aws-node-2", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.12"},
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.0.2.112"})
	expect("published endpoint after the session", map[string]string{k1b.PublicKey().String(): "192.0.2.11:51822", k2.PublicKey().String(): "192.0.2.12:51822", k3.PublicKey().String(): "[fd00::13]:51822"},
		"198.18.11.0/24", "198.18.12.0/24", "198.18.13.0/24", "fd00:198:12::/64")
	if now := devs.Counts().PeerChanges; now-ops != 1 {
		t.Errorf("setting the published endpoint back took %d peer operations, want 1", now-ops)
	}
	ops = devs.Counts().PeerChanges
	annotate(t, aws, "aws-node-2", peers.EndpointAnnotation("gcp"), "192.0.2.112:51822")
	expect("newly published endpoint", map[string]string{k1b.PublicKey().String(): "192.0.2.11:51822", k2.PublicKey().String(): "192.0.2.112:51822", k3.PublicKey().String(): "[fd00::13]:51822"},
		"198.18.11.0/24", "198.18.12.0/24", "198.18.13.0/24", "fd00:198:12::/64")
	if now := devs.Counts().PeerChanges; now-ops != 1 {
		t.Errorf("a newly published endpoint took %d peer operations, want 1", now-ops)
	}

	// Deleted node: only its peer and route go.
	ops = devs.Counts().PeerChanges
	if err := aws.Client.CoreV1().Nodes().Delete(ctx, "aws-node-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("deleted node", map[string]string{k1b.PublicKey().String(): "192.0.2.11:51822", k3.PublicKey().String(): "[fd00::13]:51822"},
		"198.18.11.0/24", "198.18.13.0/24")
	if now := devs.Counts().PeerChanges; now-ops != 1 {
		t.Errorf("a deleted node took %d peer operations, want 1", now-ops)
	}

	// Peers metric from the devices.
	if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peers", map[string]string{"remote": "aws", "device": "wg-aws"}); v != 2 {
		t.Errorf("peers metric = %v, want 2", v)
	}

	// Restart against the in-sync device: no peer changes, no annotation writes.
	r.Stop()
	configs := devs.Counts().Configs
	n, err := local.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2 := start(t, devs, devKey)
	expectNoReconfiguration(t, r2, devs, configs)
	n2, err := local.Client.CoreV1().Nodes().Get(ctx, "gcp-node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n2.ResourceVersion != n.ResourceVersion {
		t.Error("restart rewrote the node's annotations although they were unchanged")
	}

	// A remote outage keeps the peers.
	aws.Cut(t)
	testenv.Eventually(t, 10*time.Second, "remote down", func() error {
		if v, _ := testenv.MetricSeries(t, r2.Registry, "semaphore_wg_remote_up", map[string]string{"remote": "aws"}); v != 0 {
			return fmt.Errorf("remote_up = %v", v)
		}
		return nil
	})
	testenv.Hold(t, 2*time.Second, "peers kept during the outage", func() error {
		if got := devs.Endpoints("wg-aws"); len(got) != 2 {
			return fmt.Errorf("peers %v", got)
		}
		return nil
	})
}

// A hostile (or broken) remote publishes Nodes that claim half the address space, a metadata
// address, ranges outside the ones configured for it and the local node's own pod range: none
// of them becomes a peer or a route, each is counted by reason, and the honest node next to
// them is a peer with its route.
func TestRemoteNodesClaimingWhatIsNotTheirsGetNoPeerAndNoRoute(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	var ranges addrguard.Ranges
	if err := ranges.Decode("aws:198.18.0.0/16,aws:fd00:198::/32"); err != nil {
		t.Fatal(err)
	}
	devs := devicetest.New()
	r := startWith(t, devs, devicetest.Key(t), controller.Options{Guard: addrguard.New(ranges)})

	honest := devicetest.Key(t)
	remoteNode(t, "aws-honest", honest.PublicKey(), "192.0.2.31:51822", "198.18.31.0/24")
	hostile := map[string][]string{
		"aws-half-v4":       {"0.0.0.0/1"},
		"aws-other-half-v4": {"128.0.0.0/1"},
		"aws-wide-v6":       {"198.18.32.0/24", "fd00::/8"},
		"aws-metadata":      {"169.254.169.254/32"},
		"aws-elsewhere":     {"198.51.100.0/24"},
		"aws-our-pods":      {"198.18.21.0/25"},
		"aws-our-node":      {"192.0.2.21/32"},
	}
	for name, cidrs := range hostile {
		remoteNode(t, name, devicetest.Key(t).PublicKey(), "192.0.2.40:51822", cidrs...)
	}
	remoteNode(t, "aws-metadata-endpoint", devicetest.Key(t).PublicKey(), "169.254.169.254:53", "198.18.33.0/24")

	want := map[string]float64{
		addrguard.ReasonTooWide: 3, addrguard.ReasonSpecial: 1, addrguard.ReasonOutsideRanges: 2,
		addrguard.ReasonLocal: 1, peers.ReasonBadEndpoint: 1,
	}
	testenv.Eventually(t, 30*time.Second, "refused nodes counted by reason", func() error {
		for reason, n := range want {
			if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_peers", map[string]string{"remote": "aws", "reason": reason}); v != n {
				return fmt.Errorf("skipped_peers{reason=%s} = %v, want %v", reason, v, n)
			}
		}
		return nil
	})
	peersNow, routes := devs.Endpoints("wg-aws"), devs.Routes("wg-aws")
	if fmt.Sprint(peersNow) != fmt.Sprint(map[string]string{honest.PublicKey().String(): "192.0.2.31:51822"}) || fmt.Sprint(routes) != "[198.18.31.0/24]" {
		t.Errorf("peers %v and routes %v, want only the honest node and 198.18.31.0/24", peersNow, routes)
	}
}
