//go:build linux

package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

// The calico-ipam half: the remote's 500 nodes carry no pod CIDR; their addresses are in
// Calico IPAM blocks, as calico-ipam writes them (calicoipam.Object).
const (
	blocksPerNode = 4
	blockBits     = 26 // Calico's default block size: 64 addresses
	borrowedAddrs = 200
	// ownPods is how many addresses of each of a node's first three blocks are allocated to
	// pods on the node itself (ordinals 0 to 7); its fourth block is empty, as a block
	// Calico may release or hand to another node is.
	ownPods = 8
	// borrowedOrdinal is the ordinal of the addresses borrowed at the start, borrowOrdinal
	// that of those the changes borrow.
	borrowedOrdinal = 32
	borrowOrdinal   = 40
	blockRounds     = 5 // rounds of the four block changes
)

// blockCIDR is the j-th /26 of 198.18.0.0/15: 2,048 of them, 2,000 for the nodes' blocks and
// spares for the blocks the changes add.
func blockCIDR(j int) netip.Prefix {
	a := (uint32(198)<<24 | uint32(18)<<16) + uint32(j)<<(32-blockBits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), blockBits)
}

// nth is the ordinal-th address of p.
func nth(p netip.Prefix, ordinal int) netip.Addr {
	a := p.Addr()
	for range ordinal {
		a = a.Next()
	}
	return a
}

// ipamBlock is the benchmark's record of one IPAM block in the remote.
type ipamBlock struct {
	cidr    netip.Prefix
	owner   string                // affine node
	holders map[netip.Addr]string // allocated address -> node of its pod
	rv      string                // resourceVersion of the last write
}

// ipamModel is what the remote's blocks say, kept by the benchmark as it writes them.
type ipamModel map[string]*ipamBlock // by block name

// initialIPAM gives node i blocks 4i to 4i+3, the first three with ownPods pods of its own,
// and lends 200 addresses: the k-th is allocated in a block of node (7k mod 500) to a pod on
// node (3(7k)+1 mod 500), never the same node, 200 distinct lenders and holders.
func initialIPAM() ipamModel {
	m := ipamModel{}
	for i := range remoteNodes {
		for n := range blocksPerNode {
			cidr := blockCIDR(blocksPerNode*i + n)
			b := &ipamBlock{cidr: cidr, owner: remoteNode(i), holders: map[netip.Addr]string{}}
			if n < blocksPerNode-1 {
				for o := range ownPods {
					b.holders[nth(cidr, o)] = remoteNode(i)
				}
			}
			m[calicoipam.BlockName(cidr)] = b
		}
	}
	for k := range borrowedAddrs {
		lender := (7 * k) % remoteNodes
		holder := (3*lender + 1) % remoteNodes
		b := m[calicoipam.BlockName(blockCIDR(blocksPerNode*lender+k%(blocksPerNode-1)))]
		b.holders[nth(b.cidr, borrowedOrdinal)] = remoteNode(holder)
	}
	return m
}

// prefixes is where each node's addresses are according to the model, worked out here
// independently of package calicoipam: a block's range belongs to its node, an address lent
// to a pod on another node belongs to that node as a /32.
func (m ipamModel) prefixes() map[string][]netip.Prefix {
	out := map[string][]netip.Prefix{}
	for _, b := range m {
		out[b.owner] = append(out[b.owner], b.cidr)
		for a, node := range b.holders {
			if node != b.owner {
				out[node] = append(out[node], netip.PrefixFrom(a, 32))
			}
		}
	}
	return out
}

// want is the device the model calls for: remote node i's peer with all its prefixes.
func (m ipamModel) want(keys []wgtypes.Key) (map[wgtypes.Key]peerState, int) {
	byNode := m.prefixes()
	want := map[wgtypes.Key]peerState{}
	routes := 0
	for i, k := range keys {
		ps := byNode[remoteNode(i)]
		var nets []string
		for _, p := range ps {
			nets = append(nets, p.String())
		}
		slices.Sort(nets)
		allowed := fmt.Sprint(nets)
		if len(nets) == 1 {
			allowed = nets[0]
		}
		want[k] = peerState{endpoint: endpoint(i), allowedIPs: allowed, keepalive: keepalive}
		routes += len(ps)
	}
	return want, routes
}

// calicoBench measures the calico-ipam source in the benchmark's remote.
type calicoBench struct {
	b      *testing.B
	run    *running
	blocks dynamic.ResourceInterface
	reader *device.Manager
	dev    string
	keys   []wgtypes.Key
	model  ipamModel
	want   map[wgtypes.Key]peerState
	routes int

	coldStart   time.Duration
	synced      time.Duration // cold start: when the remote's caches had synced
	peersDone   time.Duration // cold start: when the device first held every peer
	coldConfigs uint64
	syncMean    time.Duration // the controller's sync of one block change
	// listBlocks and listNodes are how long one list of the remote's blocks (through the
	// dynamic client, as the controller's informer makes it) and of its nodes takes.
	listBlocks, listNodes time.Duration
	setup                 time.Duration // creating the nodes and blocks
	restOps               float64       // peer and route operations and device writes at rest
	kinds                 []string
	ops                   map[string][]float64 // peer operations of each change, by kind
	routeOps              map[string][]float64
	writes                map[string][]float64
	latencies             []time.Duration
}

// Kinds of block change, and the peer operations each must cost: one per peer whose
// addresses change.
const (
	changeAdd     = "add"     // a new block affine to one node
	changeMove    = "move"    // an empty block re-affined to another node (spec.affinity)
	changeBorrow  = "borrow"  // one more address of a node's block allocated to a pod elsewhere
	changeRelease = "release" // an empty block deleted
)

var wantOps = map[string]float64{changeAdd: 1, changeMove: 2, changeBorrow: 1, changeRelease: 1}

// The route operations of each kind: a new range, none (the range stays on this device, only
// its peer changes), a new /32, a range gone.
var wantRouteOps = map[string]float64{changeAdd: 1, changeMove: 0, changeBorrow: 1, changeRelease: 1}

// benchCalico replaces the remote's nodes by 500 without a pod CIDR and their IPAM blocks, and
// measures a controller reading them with the calico-ipam source: its cold start, writes at
// rest and blockRounds rounds of the four block changes.
func benchCalico(b *testing.B, local, aws *testenv.Cluster, awsClient kubernetes.Interface, reader *device.Manager, dev string) *calicoBench {
	ctx := context.Background()
	clearRemote(b, awsClient, reader, dev)

	c := &calicoBench{
		b: b, reader: reader, dev: dev, model: initialIPAM(),
		blocks: dynamic.NewForConfigOrDie(measure.Unthrottled(aws)).Resource(calicoipam.Resource),
		kinds:  []string{changeAdd, changeMove, changeBorrow, changeRelease},
		ops:    map[string][]float64{}, routeOps: map[string][]float64{}, writes: map[string][]float64{},
	}
	start := time.Now()
	_, c.keys = populate(b, awsClient, 0, remoteNodes, nil)
	names := make([]string, 0, len(c.model))
	for name := range c.model {
		names = append(names, name)
	}
	measure.InParallel(b, len(names), func(i int) error { return c.write(names[i]) })
	c.setup = time.Since(start)
	c.want, c.routes = c.model.want(c.keys)
	b.Logf("created %d remote nodes without pod CIDR and %d IPAM blocks (%d borrowed addresses) in %v",
		remoteNodes, len(c.model), borrowedAddrs, c.setup.Round(time.Millisecond))
	if c.routes != remoteNodes*blocksPerNode+borrowedAddrs {
		b.Fatalf("the model routes %d prefixes, want %d", c.routes, remoteNodes*blocksPerNode+borrowedAddrs)
	}

	// Cold start, as for the node source: no key, no device.
	t0 := time.Now()
	c.run = startController(b, local, aws, controller.SourceCalicoIPAM)
	b.Cleanup(c.run.stop)
	c.peersDone = waitComplete(b, reader, dev, c.want, c.routes, t0, "calico-ipam cold start")
	c.coldStart = time.Since(t0)
	c.synced = c.run.marks.syncedAfter(t0)
	c.coldConfigs = c.run.devices.Counters().DeviceConfigs

	// At rest: no operation and no write at all.
	ops0, dev0 := c.run.counts(b), c.run.devices.Counters()
	time.Sleep(restPeriod)
	ops1, dev1 := c.run.counts(b), c.run.devices.Counters()
	c.restOps = (ops1.peerOps - ops0.peerOps) + (ops1.routeOps - ops0.routeOps) +
		float64((dev1.DeviceConfigs-dev0.DeviceConfigs)+(dev1.LinkChanges-dev0.LinkChanges)+(dev1.RouteChanges-dev0.RouteChanges))
	if c.restOps != 0 {
		b.Fatalf("calico-ipam at rest: %v peer operations, %v route operations, device writes %+v -> %+v over %v; want none",
			ops1.peerOps-ops0.peerOps, ops1.routeOps-ops0.routeOps, dev0, dev1, restPeriod)
	}

	sync0, syncN0 := testenv.HistogramSeries(b, c.run.Registry, "semaphore_wg_reconcile_duration_seconds", nil)
	for r := range blockRounds {
		// add: spare block 2000+r, affine to node X with one pod of X.
		x := remoteNode((97*r + 5) % remoteNodes)
		cidr := blockCIDR(remoteNodes*blocksPerNode + r)
		c.change(changeAdd, calicoipam.BlockName(cidr), func(bl **ipamBlock) {
			*bl = &ipamBlock{cidr: cidr, owner: x, holders: map[netip.Addr]string{cidr.Addr(): x}}
		})
		// move: node Y's empty fourth block goes to node Z.
		y := (131*r + 17) % remoteNodes
		z := remoteNode((y + remoteNodes/2) % remoteNodes)
		c.change(changeMove, calicoipam.BlockName(blockCIDR(blocksPerNode*y+blocksPerNode-1)), func(bl **ipamBlock) {
			(*bl).owner = z
		})
		// borrow: an address of node P's first block allocated to a pod on node Q.
		p := (53*r + 3) % remoteNodes
		q := remoteNode((p + 123) % remoteNodes)
		c.change(changeBorrow, calicoipam.BlockName(blockCIDR(blocksPerNode*p)), func(bl **ipamBlock) {
			(*bl).holders[nth((*bl).cidr, borrowOrdinal)] = q
		})
		// release: node R's empty fourth block deleted.
		rel := (71*r + 29) % remoteNodes
		c.change(changeRelease, calicoipam.BlockName(blockCIDR(blocksPerNode*rel+blocksPerNode-1)), func(bl **ipamBlock) {
			*bl = nil
		})
	}
	sync1, syncN1 := testenv.HistogramSeries(b, c.run.Registry, "semaphore_wg_reconcile_duration_seconds", nil)
	c.syncMean = time.Duration((sync1 - sync0) / float64(syncN1-syncN0) * float64(time.Second))
	if _, routes := countDevice(reader, dev); routes != c.routes {
		b.Fatalf("%d routes after the block changes, want %d", routes, c.routes)
	}

	// Where the cold start goes: one list of each kind, after the measurements.
	t2 := time.Now()
	if _, err := c.blocks.List(ctx, metav1.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	c.listBlocks = time.Since(t2)
	t2 = time.Now()
	if _, err := awsClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	c.listNodes = time.Since(t2)
	return c
}

// clearRemote deletes every remote node and waits until they are gone and so is the device of
// the controller that read them (stopped before): the next controller starts cold.
func clearRemote(b *testing.B, client kubernetes.Interface, reader *device.Manager, dev string) {
	ctx := context.Background()
	if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(b, changeMax, "the remote's nodes deleted", func() error {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) > 0 {
			err = fmt.Errorf("%d nodes left", len(list.Items))
		}
		return err
	})
	waitGone(b, reader, dev)
}

// waitGone waits until device dev no longer answers, and deletes its link: a userspace
// device's link outlives its process, with its routes, and the next start must be cold.
func waitGone(b *testing.B, reader *device.Manager, dev string) {
	testenv.Eventually(b, changeMax, "the previous controller's device gone", func() error {
		if _, err := reader.Peers(dev); err == nil {
			return fmt.Errorf("device %s still answers", dev)
		}
		return nil
	})
	if err := reader.Delete(dev); err != nil {
		b.Fatalf("deleting the previous controller's device: %v", err)
	}
}

// write creates or updates (when it has a resourceVersion) block name as the model has it, or
// deletes it when the model no longer does.
func (c *calicoBench) write(name string) error {
	ctx := context.Background()
	bl := c.model[name]
	if bl == nil {
		return c.blocks.Delete(ctx, name, metav1.DeleteOptions{})
	}
	obj, err := calicoipam.Object(bl.cidr, bl.owner, bl.holders)
	if err != nil {
		return err
	}
	if bl.rv == "" {
		obj, err = c.blocks.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		obj.SetResourceVersion(bl.rv)
		obj, err = c.blocks.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	bl.rv = obj.GetResourceVersion()
	return nil
}

// change applies edit to block name in the model (a nil block: none; setting nil: delete),
// writes it, waits until the device shows it and the sync that applied it has finished, and
// checks that it cost the kind's peer and route operations, one device write, and left every
// other peer and route alone.
func (c *calicoBench) change(kind, name string, edit func(**ipamBlock)) {
	b := c.b
	bl := c.model[name]
	if bl != nil {
		cp := *bl
		cp.holders = map[netip.Addr]string{}
		for a, n := range bl.holders {
			cp.holders[a] = n
		}
		bl = &cp
	}
	edit(&bl)
	if bl == nil {
		delete(c.model, name)
	} else {
		c.model[name] = bl
	}
	want, routes := c.model.want(c.keys)
	var concerned []wgtypes.Key
	for k, w := range want {
		if c.want[k] != w {
			concerned = append(concerned, k)
		}
	}
	if float64(len(concerned)) != wantOps[kind] {
		b.Fatalf("benchmark: %s of block %s concerns %d peers, meant %v", kind, name, len(concerned), wantOps[kind])
	}

	before, c0 := c.run.counts(b), c.run.devices.Counters()
	t1 := time.Now()
	if err := c.write(name); err != nil {
		b.Fatalf("%s of block %s: %v", kind, name, err)
	}
	for {
		got := map[wgtypes.Key]peerState{}
		if ps, err := c.reader.Peers(c.dev); err == nil {
			got = peerStates(ps)
		}
		shown := true
		for _, k := range concerned {
			shown = shown && got[k] == want[k]
		}
		if shown {
			break
		}
		if time.Since(t1) > changeMax {
			b.Fatalf("%s of block %s not on the device after %v", kind, name, changeMax)
		}
		// One read of 500 peers and their 2,200 ranges takes several milliseconds; reading
		// back to back would take a core from the controller on a small machine.
		time.Sleep(5 * time.Millisecond)
	}
	c.latencies = append(c.latencies, time.Since(t1))
	testenv.Eventually(b, changeMax, "reconcile after the block change", func() error {
		if now := c.run.counts(b); now.reconciles <= before.reconciles {
			return fmt.Errorf("no reconcile finished yet")
		}
		return nil
	})
	after, c1 := c.run.counts(b), c.run.devices.Counters()
	ops, routeOps := after.peerOps-before.peerOps, after.routeOps-before.routeOps
	writes := float64(c1.DeviceConfigs - c0.DeviceConfigs)
	c.ops[kind] = append(c.ops[kind], ops)
	c.routeOps[kind] = append(c.routeOps[kind], routeOps)
	c.writes[kind] = append(c.writes[kind], writes)
	if ops != wantOps[kind] || routeOps != wantRouteOps[kind] || writes != 1 {
		b.Fatalf("%s of block %s: %v peer operations (want %v), %v route operations (want %v), %v device writes (want 1)",
			kind, name, ops, wantOps[kind], routeOps, wantRouteOps[kind], writes)
	}
	c.want, c.routes = want, routes
	if diff := diffPeers(c.want, snapshot(b, c.reader, c.dev)); len(diff) > 0 {
		b.Fatalf("%s of block %s: the device differs from the desired peers: %v", kind, name, diff)
	}
}

// sum adds up the values.
func sum(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

// report adds the calico-ipam figures to the benchmark's.
func (c *calicoBench) report(b *testing.B) {
	for _, kind := range c.kinds {
		b.ReportMetric(sum(c.ops[kind])/float64(len(c.ops[kind])), "calico_"+kind+"_peer_ops")
	}
	p50, maxLat := percentiles(c.latencies)
	b.ReportMetric(float64(p50.Microseconds())/1000, "calico_change_p50_ms")
	b.ReportMetric(float64(maxLat.Microseconds())/1000, "calico_change_max_ms")
	b.ReportMetric(float64(c.syncMean.Microseconds())/1000, "calico_sync_ms")
	b.ReportMetric(c.restOps, "calico_idle_ops")
}

func (c *calicoBench) print(nodeColdStart time.Duration, ratio float64) {
	fmt.Printf("wireguard calico-ipam: %d remote nodes without pod CIDR, %d IPAM blocks (/%d) and %d borrowed addresses -> %d peers and %d routes in %v (cold start, as above; %d device configuration calls in all; caches synced at %v, peers complete at %v); node source %v: ratio %.2f\n",
		remoteNodes, remoteNodes*blocksPerNode, blockBits, borrowedAddrs, remoteNodes, remoteNodes*blocksPerNode+borrowedAddrs,
		c.coldStart.Round(time.Millisecond), c.coldConfigs, c.synced.Round(time.Millisecond), c.peersDone.Round(time.Millisecond),
		nodeColdStart.Round(time.Millisecond), ratio)
	for _, kind := range c.kinds {
		fmt.Printf("wireguard calico-ipam: block %-7s x%d: %.0f peer operations, %.0f route operations, %.0f device writes\n",
			kind, len(c.ops[kind]), sum(c.ops[kind]), sum(c.routeOps[kind]), sum(c.writes[kind]))
	}
	p50, maxLat := percentiles(c.latencies)
	fmt.Printf("wireguard calico-ipam: %d block changes -> device p50 %v, max %v; the controller's sync of one takes %v on average; operations at rest over %v: %.0f\n",
		len(c.latencies), p50.Round(100*time.Microsecond), maxLat.Round(100*time.Microsecond), c.syncMean.Round(10*time.Microsecond), restPeriod, c.restOps)
	fmt.Printf("wireguard calico-ipam: one list of the %d blocks takes %v, of the %d nodes %v\n",
		len(c.model), c.listBlocks.Round(time.Millisecond), remoteNodes, c.listNodes.Round(time.Millisecond))
	if ratio > 2 {
		fmt.Println("wireguard calico-ipam: aim missed (cold start within 2x of the node source's)")
	}
}
