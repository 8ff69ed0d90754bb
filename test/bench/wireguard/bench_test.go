//go:build linux

// Package bench measures semaphore-wireguard against real API servers and a real (userspace)
// WireGuard device: a cold start against a remote cluster of 500 annotated nodes until the
// device holds all 500 peers and their routes, device writes at rest, and then single node
// changes: how many peer operations each one costs (the aim is exactly one) and how long it
// takes to reach the device. The same run then measures the calico-ipam source against the
// same API server (calico_test.go): 500 nodes without a pod CIDR whose addresses come from
// 2,000 IPAM blocks and 200 borrowed addresses, its cold start next to the node source's, and
// what single block changes cost. Before that, the same remote reached through one of its nodes,
// its gateway (gateway_test.go): one peer for every node's pod CIDR, what a node joining and
// another gateway elected cost. Last, the real binary runs as a process of its own
// (process_test.go) at 500 and 2,000 nodes, for its peak memory. Run it with `make bench`; it
// needs root (it runs in network and mount namespaces of its own) and skips otherwise.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/controller/controllertest"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

const (
	remoteNodes = 500
	changes     = 20 // single-node changes, one after the other
	localName   = "gcp"
	remoteName  = "aws"
	nodeName    = "gcp-node-1"
	listenPort  = 51821
	keepalive   = 25 * time.Second
	userAgent   = "semaphore-wireguard"
	convergeMax = 2 * time.Minute
	changeMax   = 30 * time.Second
	restPeriod  = 3 * time.Second
)

// The API servers run inside the namespaces too, so that the controller reaches them on the
// namespace's loopback.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunInNamespaces(m, testenv.PrepareAPIServers))
}

// endpoint is where remote node i says it listens: spread over 192.0.2.1-250, one port for
// every 250 nodes, so each node's is its own (at 500 nodes: two ports). Nothing is reachable
// there: the namespace has no route, so handshakes fail at once.
func endpoint(i int) string { return fmt.Sprintf("192.0.2.%d:%d", i%250+1, 51821+i/250) }

// changedEndpoint is the endpoint the k-th change gives a node: unique, and never one endpoint gives.
func changedEndpoint(k int) string { return fmt.Sprintf("192.0.2.%d:%d", k%250+1, 52821+k/250) }

// podCIDR is remote node i's pod CIDR: the /24s of 198.18.0.0/15 (room for 512).
func podCIDR(i int) string { return fmt.Sprintf("198.%d.%d.0/24", 18+i/256, i%256) }

// peerState is what a device holds for one peer.
type peerState struct {
	endpoint, allowedIPs string
	keepalive            time.Duration
}

func BenchmarkWireGuard(b *testing.B) {
	testenv.RequireNamespaces(b)
	b.StopTimer()
	// The remote has Calico's IPAMBlock CRD for the calico-ipam half.
	crds := testenv.CRDs("wireguard")
	clusters := testenv.Start(b, testenv.Options{CRDDirs: []string{crds}}, localName, remoteName)
	local, aws := clusters[0], clusters[1]
	ctx := context.Background()

	awsClient := kubernetes.NewForConfigOrDie(measure.Unthrottled(aws))
	createLocalNode(b, local)
	start := time.Now()
	nodes, keys := populate(b, awsClient, 0, remoteNodes, podCIDR)
	b.Logf("created %d annotated remote nodes in %v", remoteNodes, time.Since(start).Round(time.Millisecond))

	// The device is read through its UAPI socket by a Manager of our own, as `wg show` would.
	reader, err := device.NewManager(device.ModeUserspace, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	dev := peers.DeviceName(remoteName)
	want := map[wgtypes.Key]peerState{}
	for i, k := range keys {
		want[k] = peerState{endpoint: endpoint(i), allowedIPs: podCIDR(i), keepalive: keepalive}
	}

	// Phase 1: cold start (no key, no device) until the device holds every peer and route.
	b.StartTimer()
	t0 := time.Now()
	run := startController(b, local, aws, controller.SourceNode)
	defer run.stop()
	nodePeersDone := waitComplete(b, reader, dev, want, remoteNodes, t0, "node cold start")
	coldStart := time.Since(t0)
	nodeSynced := run.marks.syncedAfter(t0)
	b.StopTimer()
	coldConfigs := run.devices.Counters().DeviceConfigs

	// Phase 2: at rest, nothing is written to the device.
	rest0 := run.devices.Counters()
	time.Sleep(restPeriod)
	rest1 := run.devices.Counters()
	restWrites := (rest1.DeviceConfigs - rest0.DeviceConfigs) + (rest1.LinkChanges - rest0.LinkChanges) + (rest1.RouteChanges - rest0.RouteChanges)

	// Phase 3: one node at a time gets a new endpoint; each must reach the device as exactly
	// one peer operation, leaving the other 499 peers and all routes as they are.
	sync0, syncN0 := testenv.HistogramSeries(b, run.Registry, "semaphore_wg_reconcile_duration_seconds", nil)
	var latencies []time.Duration
	var peerOps, deviceWrites, routeWrites, others float64
	var firstOps, firstWrites float64
	for k := range changes {
		i := (k * 37) % remoteNodes // spread over the nodes (37 is coprime with 500)
		before := run.counts(b)
		c0 := run.devices.Counters()
		n := nodes[i].DeepCopy()
		n.Annotations[peers.EndpointAnnotation(localName)] = changedEndpoint(k)
		t1 := time.Now()
		out, err := awsClient.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		nodes[i] = out
		for peerEndpoint(reader, dev, keys[i]) != changedEndpoint(k) {
			if time.Since(t1) > changeMax {
				b.Fatalf("change %d (node %d) not on the device after %v", k, i, changeMax)
			}
			time.Sleep(time.Millisecond)
		}
		latencies = append(latencies, time.Since(t1))
		// The sync that applied it goes on to the routes; count once it has finished.
		testenv.Eventually(b, changeMax, "reconcile after the change", func() error {
			if now := run.counts(b); now.reconciles <= before.reconciles {
				return fmt.Errorf("no reconcile finished yet")
			}
			return nil
		})
		after := run.counts(b)
		c1 := run.devices.Counters()
		peerOps += after.peerOps - before.peerOps
		routeWrites += after.routeOps - before.routeOps
		deviceWrites += float64(c1.DeviceConfigs - c0.DeviceConfigs)
		if k == 0 {
			firstOps, firstWrites = after.peerOps-before.peerOps, float64(c1.DeviceConfigs-c0.DeviceConfigs)
		}

		want[keys[i]] = peerState{endpoint: changedEndpoint(k), allowedIPs: podCIDR(i), keepalive: keepalive}
		diff := diffPeers(want, snapshot(b, reader, dev))
		others += float64(len(diff))
		if len(diff) > 0 {
			b.Errorf("change %d (node %d): the device differs from the desired peers: %v", k, i, diff)
		}
	}
	sync1, syncN1 := testenv.HistogramSeries(b, run.Registry, "semaphore_wg_reconcile_duration_seconds", nil)
	syncMean := time.Duration((sync1 - sync0) / float64(syncN1-syncN0) * float64(time.Second))
	readStart := time.Now()
	for range 10 {
		countDevice(reader, dev)
	}
	readTime := time.Since(readStart) / 10
	if _, routes := countDevice(reader, dev); routes != remoteNodes {
		b.Errorf("%d routes after the changes, want %d", routes, remoteNodes)
	}

	// The same remote, reached through one of its nodes, its gateway.
	gateway := benchGateway(b, run, awsClient, reader, dev, keys)

	// The same remote, read through its Calico IPAM blocks by a new controller.
	run.stop()
	calico := benchCalico(b, local, aws, awsClient, reader, dev)
	ratio := calico.coldStart.Seconds() / coldStart.Seconds()
	// The binary makes a device of the same name: one per network namespace, so the in-process
	// controller goes first.
	calico.run.stop()
	binary := benchBinary(b, local, aws, awsClient, reader, dev)

	first := latencies[0]
	p50, maxLat := percentiles(latencies)
	b.ReportMetric(coldStart.Seconds(), "node_cold_start_s")
	b.ReportMetric(calico.coldStart.Seconds(), "calico_cold_start_s")
	b.ReportMetric(ratio, "calico_vs_node_ratio")
	gateway.report(b)
	calico.report(b)
	binary.report(b)
	b.ReportMetric(peerOps/changes, "peer-ops/change")
	b.ReportMetric(deviceWrites/changes, "device-writes/change")
	b.ReportMetric(float64(first.Microseconds())/1000, "first-change-ms")
	b.ReportMetric(float64(p50.Microseconds())/1000, "change-p50-ms")
	b.ReportMetric(float64(maxLat.Microseconds())/1000, "change-max-ms")
	b.ReportMetric(float64(syncMean.Microseconds())/1000, "sync-ms")
	b.ReportMetric(float64(restWrites), "idle-writes")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("wireguard: %d remote nodes -> %d peers and %d routes in %v (cold start: new key and device, node annotated, remote listed; %d device configuration calls in all; caches synced at %v, peers complete at %v)\n",
		remoteNodes, remoteNodes, remoteNodes, coldStart.Round(time.Millisecond), coldConfigs, nodeSynced.Round(time.Millisecond), nodePeersDone.Round(time.Millisecond))
	fmt.Printf("wireguard: one node changed: %.0f peer operation(s) in %.0f device write(s), applied in %v\n",
		firstOps, firstWrites, first.Round(100*time.Microsecond))
	fmt.Printf("wireguard: %d single-node changes: %.0f peer operations, %.0f device writes, %.0f route changes, %.0f other peers changed; change -> device p50 %v, max %v\n",
		changes, peerOps, deviceWrites, routeWrites, others, p50.Round(100*time.Microsecond), maxLat.Round(100*time.Microsecond))
	fmt.Printf("wireguard: the controller's sync of one change takes %v on average; one read of the device's %d peers (how the benchmark polls) takes %v\n",
		syncMean.Round(10*time.Microsecond), remoteNodes, readTime.Round(10*time.Microsecond))
	fmt.Printf("wireguard: device writes at rest over %v: %d\n", restPeriod, restWrites)
	if coldStart > 5*time.Second || peerOps != changes || deviceWrites != changes || routeWrites != 0 || others != 0 || restWrites != 0 {
		fmt.Println("wireguard: aims missed (cold start < 5s, exactly 1 peer operation and 1 device write per change, no route changes, no other peer touched, nothing at rest)")
	}
	gateway.print()
	calico.print(coldStart, ratio)
	binary.print()
}

// percentiles returns the median and the maximum of ds.
func percentiles(ds []time.Duration) (p50, maxD time.Duration) {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2], sorted[len(sorted)-1]
}

// waitComplete polls the device from t0 until it holds exactly the peers of want (keys,
// endpoints, allowed IPs, keepalive) and routes marked routes, failing after convergeMax. It
// returns how long after t0 the peers were first seen complete.
func waitComplete(b *testing.B, reader *device.Manager, dev string, want map[wgtypes.Key]peerState, routes int, t0 time.Time, what string) (peersDone time.Duration) {
	// A read costs the device's owner time in proportion to its peers: pausing in proportion
	// too keeps the polling's share of the machine that of 500 peers every 5 ms.
	pause := 5 * time.Millisecond * time.Duration((len(want)+remoteNodes-1)/remoteNodes)
	var diff []string
	var gotPeers, gotRoutes int
	for {
		if ps, err := reader.Peers(dev); err == nil {
			gotPeers = len(ps)
			if gotPeers == len(want) {
				if diff = diffPeers(want, peerStates(ps)); len(diff) == 0 {
					if peersDone == 0 {
						peersDone = time.Since(t0)
					}
					rs, err := reader.OurRoutes(dev)
					if gotRoutes = len(rs); err == nil && gotRoutes == routes {
						return peersDone
					}
				}
			}
		}
		if time.Since(t0) > convergeMax {
			b.Fatalf("%s: not converged after %v: %d peers (want %d), %d routes (want %d); %v",
				what, convergeMax, gotPeers, len(want), gotRoutes, routes, diff)
		}
		time.Sleep(pause)
	}
}

// running is the controller under test, assembled as app.New does it.
type running struct {
	*controllertest.Running
	devices *device.Manager
	marks   *marks
	stopped bool
}

// marks is a log handler that passes errors on and notes when the controller logs that the
// remote's caches have synced (an Info record it does not print).
type marks struct {
	errors slog.Handler
	synced atomic.Int64 // Unix nanoseconds, 0 before
}

type marksHandler struct {
	*marks
	errors slog.Handler
}

func (h marksHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h marksHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "remote caches synced" {
		h.synced.CompareAndSwap(0, r.Time.UnixNano())
	}
	if r.Level >= slog.LevelError {
		return h.errors.Handle(ctx, r)
	}
	return nil
}

func (h marksHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return marksHandler{h.marks, h.errors.WithAttrs(as)}
}

func (h marksHandler) WithGroup(name string) slog.Handler {
	return marksHandler{h.marks, h.errors.WithGroup(name)}
}

// syncedAfter is how long after t0 the remote's caches synced (0 if they have not).
func (m *marks) syncedAfter(t0 time.Time) time.Duration {
	if n := m.synced.Load(); n != 0 {
		return time.Unix(0, n).Sub(t0)
	}
	return 0
}

// startController does what app.New and App.Run do for remote aws (without the admin server),
// keeping the device manager at hand for its write counters: key, device manager, clients,
// controller, device and node annotation, informers and worker.
func startController(b *testing.B, local, aws *testenv.Cluster, src controller.Source) *running {
	// wireguard-go reports every failed handshake (nothing answers at the endpoints) as a
	// warning; only errors are worth seeing here.
	mk := &marks{errors: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})}
	log := slog.New(marksHandler{mk, mk.errors})

	dev := peers.DeviceName(remoteName)
	key, _, err := device.LoadOrCreateKey(filepath.Join(b.TempDir(), "keys"), dev)
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := device.NewManager(device.ModeUserspace, log)
	if err != nil {
		b.Fatal(err)
	}
	// The component's defaults: client QPS 200, burst 400.
	opts := remote.ClientOptions{UserAgent: userAgent, QPS: 200, Burst: 400}
	remotes := controllertest.Remotes(b, opts, map[string]string{remoteName: aws.DirectKubeconfig})
	localCfg, err := remote.LocalConfig(local.DirectKubeconfig, opts)
	if err != nil {
		b.Fatal(err)
	}
	run := controllertest.Start(b, controllertest.Config{
		Options: controller.Options{LocalCluster: localName, NodeName: nodeName, MTU: mtu.Fixed(1420), Keepalive: keepalive, ResyncPeriod: 10 * time.Minute,
			PodCIDRsFrom: controller.Sources{All: src},
			// The remote nodes publish no addresses (populate writes each node once) and a
			// change moves an endpoint to another node's address: they are let in as a NAT's
			// would be.
			EndpointRanges: addrguard.Ranges{remoteName: {netip.MustParsePrefix("192.0.2.0/24")}}},
		Local:   kubernetes.NewForConfigOrDie(localCfg),
		Remotes: remotes,
		Device:  controller.RemoteDevice{Remote: remoteName, Device: dev, Key: key, ListenPort: listenPort},
		Devices: mgr,
		// The per-peer statistics are read from the device whenever their registry is
		// gathered, as Prometheus would every 15 s or so; the benchmark gathers Registry after
		// every change and while it waits, so they get a registry of their own, lest each
		// count read the device.
		Stats:         prometheus.NewRegistry(),
		ProbeInterval: 10 * time.Second,
		Log:           log,
	})
	return &running{Running: run, devices: mgr, marks: mk}
}

// stop stops the controller and the device's manager (a userspace device's link stays, for
// waitGone to delete); later calls do nothing.
func (r *running) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.Stop()
	_ = r.devices.Close()
}

type counts struct{ peerOps, routeOps, reconciles float64 }

// counts reads the controller's own record of its device changes and reconciles.
func (r *running) counts(b *testing.B) counts {
	var c counts
	for _, op := range []string{"peer_add", "peer_update", "peer_remove"} {
		v, _ := testenv.MetricSeries(b, r.Registry, "semaphore_wg_device_changes_total", map[string]string{"remote": remoteName, "operation": op})
		c.peerOps += v
	}
	for _, op := range []string{"route_add", "route_remove"} {
		v, _ := testenv.MetricSeries(b, r.Registry, "semaphore_wg_device_changes_total", map[string]string{"remote": remoteName, "operation": op})
		c.routeOps += v
	}
	c.reconciles, _ = testenv.MetricSeries(b, r.Registry, "semaphore_wg_reconcile_total", map[string]string{"remote": remoteName, "result": "success"})
	return c
}

// countDevice returns how many peers and marked routes the device has (0, 0 while it does
// not exist).
func countDevice(m *device.Manager, dev string) (peerCount, routes int) {
	ps, err := m.Peers(dev)
	if err != nil {
		return 0, 0
	}
	rs, err := m.OurRoutes(dev)
	if err != nil {
		return len(ps), 0
	}
	return len(ps), len(rs)
}

// peerEndpoint returns the endpoint the device holds for peer key ("" when absent).
func peerEndpoint(m *device.Manager, dev string, key wgtypes.Key) string {
	ps, err := m.Peers(dev)
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if p.PublicKey == key && p.Endpoint != nil {
			return p.Endpoint.String()
		}
	}
	return ""
}

func snapshot(b *testing.B, m *device.Manager, dev string) map[wgtypes.Key]peerState {
	ps, err := m.Peers(dev)
	if err != nil {
		b.Fatal(err)
	}
	return peerStates(ps)
}

func peerStates(ps []wgtypes.Peer) map[wgtypes.Key]peerState {
	out := make(map[wgtypes.Key]peerState, len(ps))
	for _, p := range ps {
		var nets []string
		for _, n := range p.AllowedIPs {
			nets = append(nets, n.String())
		}
		slices.Sort(nets)
		s := peerState{allowedIPs: fmt.Sprint(nets), keepalive: p.PersistentKeepaliveInterval}
		if len(nets) == 1 {
			s.allowedIPs = nets[0]
		}
		if p.Endpoint != nil {
			s.endpoint = p.Endpoint.String()
		}
		out[p.PublicKey] = s
	}
	return out
}

// diffPeers lists the peers that differ between want and got, at most ten.
func diffPeers(want, got map[wgtypes.Key]peerState) []string {
	var diff []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			diff = append(diff, fmt.Sprintf("%s: want %+v, got %+v (present %v)", k, w, g, ok))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: unexpected %+v", k, g))
		}
	}
	slices.Sort(diff)
	if len(diff) > 10 {
		diff = append(diff[:10], fmt.Sprintf("... and %d more", len(diff)-10))
	}
	return diff
}

func createLocalNode(b *testing.B, local *testenv.Cluster) {
	ctx := context.Background()
	n, err := local.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.254"}}
	if _, err := local.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// remoteNode is the name of remote node i.
func remoteNode(i int) string { return fmt.Sprintf("aws-node-%03d", i) }

// populate creates remote nodes from to to-1, each annotated for our cluster with a fresh
// public key and endpoint(i) (and with pod CIDR cidr(i) unless cidr is nil), and returns them
// with the keys, node i at i-from.
func populate(b *testing.B, client kubernetes.Interface, from, to int, cidr func(int) string) ([]*corev1.Node, []wgtypes.Key) {
	ctx := context.Background()
	nodes := make([]*corev1.Node, to-from)
	keys := make([]wgtypes.Key, to-from)
	for i := range keys {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k.PublicKey()
	}
	measure.InParallel(b, to-from, func(j int) error {
		i := from + j
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: remoteNode(i), Annotations: map[string]string{
				peers.PubKeyAnnotation(localName):   keys[j].String(),
				peers.EndpointAnnotation(localName): endpoint(i),
			}},
		}
		if cidr != nil {
			n.Spec = corev1.NodeSpec{PodCIDR: cidr(i), PodCIDRs: []string{cidr(i)}}
		}
		out, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		nodes[j] = out
		return err
	})
	return nodes, keys
}
