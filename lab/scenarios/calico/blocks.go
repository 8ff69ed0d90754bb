package calico

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// The calico-ipam blocks (lab check, after the Calico policy): how the nodes of the clusters
// that read layout.CalicoCluster follow its IPAM blocks (docs/calico.md). The cluster's first node
// claims a new block when a Deployment outgrows its blocks, and kube-controllers releases it
// once the Deployment is gone; a third fluentd pod, on the last node, borrows an address of
// the first node's block of layout.FluentdPool, and gives it back. Each time, the scenario times
// how soon every remote node's peer for the node concerned has the change, in its allowed IPs
// and its routes, and checks that it cost each remote node exactly one peer operation. Nothing
// else may change the blocks meanwhile: the scenario waits for the blocks to settle before it
// starts, and after each step.
const (
	// churnName is the Deployment that makes the first node claim a block.
	churnName = "ipam-churn"
	// remoteWithin bounds the time from a change of the blocks to the last remote node having
	// it.
	remoteWithin = 30 * time.Second
	// releaseWithin bounds the time kube-controllers takes to release an empty block: its grace,
	// the half grace of its ticker, and time to spare. The settling waits are as long.
	releaseWithin = layout.BlockReleaseGrace*3 + 30*time.Second
	// blocksPoll is how often the blocks and the remote nodes' devices are read while a change
	// travels.
	blocksPoll = 100 * time.Millisecond
)

// blocksRun is one run of the scenario.
type blocksRun struct {
	l      *env.Lab
	rec    *layout.Record
	client kubernetes.Interface // of layout.CalicoCluster
	// owner holds layout.FluentdPool's block, and borrower (fluentd's node) borrows from it.
	owner, borrower string
	// remotes are the nodes of the clusters that read layout.CalicoCluster, device the name of
	// their device for it.
	remotes []layout.Node
	device  string
	// names are the nodes of layout.CalicoCluster by the key each publishes, by consumer cluster.
	names map[string]map[string]string
	// settled are the remote nodes' devices when the blocks last settled, by node.
	settled map[string]status.DevicePeers
}

// CheckBlocks runs the scenario and returns the problems.
func CheckBlocks(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintf(l.Out(), "calico-ipam blocks (%s's IPAM blocks as the %s peers of the nodes of %s)\n",
		layout.CalicoCluster, peers.DeviceName(layout.CalicoCluster), strings.Join(layout.RemotesOf(layout.CalicoCluster), " and "))
	if !l.NodesRun() {
		fmt.Fprintf(l.Out(), "  skipped: %s\n", nodesSkipped(l.Record()))
		return nil
	}
	c, err := newBlocksRun(ctx, l)
	if err != nil {
		return []string{fmt.Sprintf("calico-ipam blocks: %v", err)}
	}
	// One an earlier run left.
	if _, err := c.removeChurn(ctx); err != nil {
		return []string{err.Error()}
	}
	if problems := c.settle(ctx, "before", -1); len(problems) > 0 {
		return problems
	}
	problems := c.claimAndRelease(ctx)
	if len(problems) == 0 {
		problems = c.borrow(ctx)
	}
	if err := l.RecordPods(ctx); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// newBlocksRun starts a run: it reads which key of the Calico-way cluster's nodes is which.
func newBlocksRun(ctx context.Context, l *env.Lab) (*blocksRun, error) {
	rec := l.Record()
	if rec.Nodes == nil {
		return nil, fmt.Errorf("the lab has recorded no nodes")
	}
	c := &blocksRun{
		l: l, rec: rec, client: l.Cluster(layout.CalicoCluster).Client,
		owner: layout.NodeName(layout.CalicoCluster, 0), borrower: layout.NodeName(layout.CalicoCluster, layout.NodesPerCluster-1),
		device: peers.DeviceName(layout.CalicoCluster), names: map[string]map[string]string{},
	}
	for _, consumer := range layout.RemotesOf(layout.CalicoCluster) {
		names, err := status.PeerNames(ctx, rec, layout.CalicoCluster, consumer)
		if err != nil {
			return nil, fmt.Errorf("the keys %s's nodes publish for %s: %w", layout.CalicoCluster, consumer, err)
		}
		c.names[consumer] = names
	}
	gateways := map[string]string{}
	for _, consumer := range layout.RemotesOf(layout.CalicoCluster) {
		if layout.SpecOf(consumer).Gateways {
			gw, err := status.ActiveGateway(ctx, rec, consumer, layout.CalicoCluster)
			if err != nil {
				return nil, err
			}
			gateways[consumer] = gw
		}
	}
	for _, n := range rec.Nodes.Nodes {
		// Of a cluster reaching it through gateways, only the active gateway peers with it.
		if gw, ok := gateways[n.Cluster]; n.Cluster != layout.CalicoCluster && (!ok || gw == n.Name) {
			c.remotes = append(c.remotes, n)
		}
	}
	return c, nil
}

// claimAndRelease makes the first node claim a block, and release it.
func (c *blocksRun) claimAndRelease(ctx context.Context) []string {
	block, problems := c.claim(ctx)
	gone, err := c.removeChurn(ctx)
	if err != nil {
		return append(problems, err.Error())
	}
	if len(problems) > 0 {
		return problems
	}
	return c.release(ctx, block, gone)
}

// claim runs one pod more on the first node than its blocks of layout.PodsPool have free addresses,
// and expects it to claim exactly one new block, which every remote node's peer for it then
// has.
func (c *blocksRun) claim(ctx context.Context) (*calicoipam.Block, []string) {
	before, err := status.IPAMBlocks(ctx, c.rec)
	if err != nil {
		return nil, []string{fmt.Sprintf("reading %s's IPAM blocks: %v", layout.CalicoCluster, err)}
	}
	free, own := freeAddresses(before, poolCIDR(layout.PodsPool), c.owner)
	replicas := int32(free + 1)
	ctr := c.l.SampleContainer(churnName, "serve", "-listen", ":8080")
	onOwner := map[string]string{corev1.LabelHostname: c.owner}
	if err := c.l.CreateSampleDeployment(ctx, c.l.Cluster(layout.CalicoCluster), layout.SampleNamespace, churnName, replicas, nil, onOwner, ctr); err != nil {
		return nil, []string{fmt.Sprintf("%s: creating Deployment %s: %v", layout.CalicoCluster, churnName, err)}
	}
	created := time.Now()
	block, seen, err := c.waitNewBlock(ctx, before)
	if err != nil {
		return nil, []string{err.Error()}
	}
	fmt.Fprintf(c.l.Out(), "  claimed: %s had %d free addresses in its blocks of pool %s (%s); %d %s pods made it claim %s (created %s)\n",
		c.owner, free, layout.PodsPool, cmp.Or(strings.Join(own, ", "), "none"), replicas, churnName, block.CIDR, block.CreationTimestamp.Format(time.TimeOnly))
	cidr, err := netip.ParsePrefix(block.CIDR)
	if err != nil {
		return block, []string{fmt.Sprintf("block %s: %v", block.Name, err)}
	}
	claimed := peerChange{node: c.owner, prefix: cidr, since: seen,
		what: fmt.Sprintf("it was first seen (%s after the Deployment's creation)", seen.Sub(created).Round(10*time.Millisecond))}
	if p := c.timeRemotes(ctx, "claimed", claimed); p != "" {
		return block, []string{p}
	}
	if p := c.waitChurn(ctx, int(replicas)); p != "" {
		return block, []string{p}
	}
	if p := c.onlyNewBlock(ctx, before, block); p != "" {
		return block, []string{p}
	}
	return block, c.settle(ctx, "claimed", 1)
}

// poolCIDR is the range of the Calico-way cluster's pool name.
func poolCIDR(name string) netip.Prefix {
	for _, p := range layout.IPPoolsOf(layout.CalicoCluster) {
		if p.Name == name {
			return p.CIDR
		}
	}
	return netip.Prefix{}
}

// waitNewBlock waits for a block affine to the first node that before does not have, and
// returns it and when it was first seen.
func (c *blocksRun) waitNewBlock(ctx context.Context, before []*calicoipam.Block) (*calicoipam.Block, time.Time, error) {
	var found []*calicoipam.Block
	err := wait.PollUntilContextTimeout(ctx, blocksPoll, calicoSettle, true, func(ctx context.Context) (bool, error) {
		// An error (the API server busy) is asked again.
		now, err := status.IPAMBlocks(ctx, c.rec)
		if err == nil {
			found = newBlocks(before, now, c.owner)
		}
		return len(found) > 0, nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s claimed no new block within %s of %s's creation", c.owner, calicoSettle, churnName)
	}
	return found[0], time.Now(), nil
}

// onlyNewBlock checks that block is the only block the first node claimed since before.
func (c *blocksRun) onlyNewBlock(ctx context.Context, before []*calicoipam.Block, block *calicoipam.Block) string {
	now, err := status.IPAMBlocks(ctx, c.rec)
	if err != nil {
		return fmt.Sprintf("reading %s's IPAM blocks: %v", layout.CalicoCluster, err)
	}
	var cidrs []string
	for _, b := range newBlocks(before, now, c.owner) {
		cidrs = append(cidrs, b.CIDR)
	}
	if !slices.Equal(cidrs, []string{block.CIDR}) {
		return fmt.Sprintf("%s claimed blocks %v for the %s pods, want only %s", c.owner, cidrs, churnName, block.CIDR)
	}
	return ""
}

// waitChurn waits for replicas pods of churnName to run, with an address.
func (c *blocksRun) waitChurn(ctx context.Context, replicas int) string {
	pods := c.client.CoreV1().Pods(layout.SampleNamespace)
	running := 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, calicoSettle, true, func(ctx context.Context) (bool, error) {
		// An error (the API server busy) is asked again.
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + churnName})
		running = 0
		for _, p := range observe.PodsOrNone(list, err) {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == replicas, nil
	})
	if err != nil {
		return fmt.Sprintf("%s: %d of the %d %s pods run within %s", layout.CalicoCluster, running, replicas, churnName, calicoSettle)
	}
	return ""
}

// removeChurn deletes churnName, if there is one, and returns when its last pod was gone.
func (c *blocksRun) removeChurn(ctx context.Context) (time.Time, error) {
	background := metav1.DeletePropagationBackground
	err := c.client.AppsV1().Deployments(layout.SampleNamespace).Delete(ctx, churnName, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return time.Time{}, fmt.Errorf("%s: deleting Deployment %s: %w", layout.CalicoCluster, churnName, err)
	}
	pods := c.client.CoreV1().Pods(layout.SampleNamespace)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, calicoSettle, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + churnName})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: the %s pods are not gone within %s", layout.CalicoCluster, churnName, calicoSettle)
	}
	return time.Now(), nil
}

// release waits for kube-controllers to release block, empty since its pods were gone at gone,
// and for every remote node's peer for the first node to lose it.
func (c *blocksRun) release(ctx context.Context, block *calicoipam.Block, gone time.Time) []string {
	var now []*calicoipam.Block
	err := wait.PollUntilContextTimeout(ctx, blocksPoll, releaseWithin, true, func(ctx context.Context) (bool, error) {
		// An error (the API server busy) is asked again.
		blocks, err := status.IPAMBlocks(ctx, c.rec)
		if err == nil {
			now = liveBlocks(blocks)
		}
		return err == nil && !slices.ContainsFunc(now, func(b *calicoipam.Block) bool { return b.Name == block.Name }), nil
	})
	if err != nil {
		return []string{fmt.Sprintf("kube-controllers did not release %s's empty block %s within %s of its last pod's end (%s's blocks: %s)",
			c.owner, block.CIDR, releaseWithin, c.owner, strings.Join(blocksOf(now, c.owner), ", "))}
	}
	cidr, _ := netip.ParsePrefix(block.CIDR) // claim parsed it
	released := time.Now()
	fmt.Fprintf(c.l.Out(), "  released: %s gone; kube-controllers released %s %s later (its grace is %s)\n",
		churnName, block.CIDR, released.Sub(gone).Round(100*time.Millisecond), layout.BlockReleaseGrace)
	if p := c.timeRemotes(ctx, "released", peerChange{node: c.owner, prefix: cidr, removed: true, since: released, what: "it was first seen gone"}); p != "" {
		return []string{p}
	}
	return c.settle(ctx, "released", 1)
}

// borrow scales fluentd (in layout.CalicoCluster, on its last node) up by one pod, whose address
// is borrowed from the first node's block of layout.FluentdPool, and back, making the ReplicaSet
// remove that pod.
func (c *blocksRun) borrow(ctx context.Context) []string {
	d, err := c.client.AppsV1().Deployments(layout.SampleNamespace).Get(ctx, layout.FluentdName, metav1.GetOptions{})
	if err != nil {
		return []string{fmt.Sprintf("%s: reading Deployment %s: %v", layout.FluentdCluster, layout.FluentdName, err)}
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	up := time.Now()
	if err := observe.ScaleDeployment(ctx, c.client, layout.SampleNamespace, layout.FluentdName, replicas+1); err != nil {
		return []string{fmt.Sprintf("%s: scaling %s to %d: %v", layout.FluentdCluster, layout.FluentdName, replicas+1, err)}
	}
	var problems []string
	pod, err := observe.WaitNewPod(ctx, c.client.CoreV1().Pods(layout.SampleNamespace), layout.FluentdName, c.rec.PodsOf(layout.FluentdCluster, layout.FluentdName), observe.PodRunning)
	if err != nil {
		problems = []string{err.Error()}
	} else {
		problems = c.lent(ctx, pod, up)
	}
	down := time.Now()
	gone, err := scaleBack(ctx, c.client, layout.FluentdName, pod, replicas)
	if err != nil {
		return append(problems, err.Error())
	}
	if len(problems) > 0 || pod == nil {
		return problems
	}
	back := peerChange{node: pod.Spec.NodeName, prefix: hostPrefix(pod.Status.PodIP), removed: true, since: down,
		what: fmt.Sprintf("the scale-down (the pod was gone %s after it)", gone.Sub(down).Round(10*time.Millisecond))}
	if p := c.timeRemotes(ctx, "given back", back); p != "" {
		return []string{p}
	}
	return c.settle(ctx, "given back", 1)
}

// lent checks that fluentd's new pod, seen running now, runs on the last node with an address
// of the first node's block of layout.FluentdPool, and waits for every remote node's peer for its
// node to have the address since the scale-up at up.
func (c *blocksRun) lent(ctx context.Context, pod *corev1.Pod, up time.Time) []string {
	seen := time.Now()
	blocks, err := status.IPAMBlocks(ctx, c.rec)
	if err != nil {
		return []string{fmt.Sprintf("reading %s's IPAM blocks: %v", layout.CalicoCluster, err)}
	}
	host := hostPrefix(pod.Status.PodIP)
	if p := borrowedProblem(blocks, host, pod.Spec.NodeName, c.borrower, c.owner, poolCIDR(layout.FluentdPool)); p != "" {
		return []string{fmt.Sprintf("%s's new pod %s: %s", layout.FluentdName, pod.Name, p)}
	}
	fmt.Fprintf(c.l.Out(), "  borrowed: %s's new pod %s on %s has %s, of %s's block of pool %s\n",
		layout.FluentdName, pod.Name, pod.Spec.NodeName, pod.Status.PodIP, c.owner, layout.FluentdPool)
	lent := peerChange{node: pod.Spec.NodeName, prefix: host, since: up,
		what: fmt.Sprintf("the scale-up (the pod was seen running %s after it)", seen.Sub(up).Round(10*time.Millisecond))}
	if p := c.timeRemotes(ctx, "borrowed", lent); p != "" {
		return []string{p}
	}
	return c.settle(ctx, "borrowed", 1)
}

// hostPrefix is the single-address prefix of ip, invalid when ip is no address.
func hostPrefix(ip string) netip.Prefix {
	p, _ := netip.ParsePrefix(hostNet(ip))
	return p
}

// scaleBack scales Deployment app in the sample namespace back to replicas, making the
// ReplicaSet remove pod (the new one, nil when none came), and returns when pod was gone.
func scaleBack(ctx context.Context, client kubernetes.Interface, app string, pod *corev1.Pod, replicas int32) (time.Time, error) {
	pods := client.CoreV1().Pods(layout.SampleNamespace)
	if pod != nil {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"-1000"}}}`, deletionCost)
		if _, err := pods.Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return time.Time{}, fmt.Errorf("marking %s the pod to remove: %w", pod.Name, err)
		}
	}
	if err := observe.ScaleDeployment(ctx, client, layout.SampleNamespace, app, replicas); err != nil {
		return time.Time{}, fmt.Errorf("scaling %s back to %d: %w", app, replicas, err)
	}
	if pod == nil {
		return time.Time{}, nil
	}
	return observe.WaitGone(ctx, pods, pod.Name)
}

// peerChange is a change every remote node's peer for node must show: prefix in its allowed
// IPs and as a route, or (removed) in neither; since is when the change was made or first seen,
// what says which.
type peerChange struct {
	node    string
	prefix  netip.Prefix
	removed bool
	since   time.Time
	what    string
}

func (ch peerChange) String() string {
	verb := "has"
	if ch.removed {
		verb = "lost"
	}
	return fmt.Sprintf("peer for %s %s %s", ch.node, verb, ch.prefix)
}

// shownBy tells whether device d shows the change.
func (ch peerChange) shownBy(d status.DevicePeers) bool {
	allowed := slices.Contains(d.AllowedIPs[ch.node], ch.prefix.String())
	routed := slices.Contains(d.Routes, ch.prefix.String())
	return allowed == !ch.removed && routed == !ch.removed
}

// timeRemotes waits until every remote node's device shows ch, prints how long after ch.since
// the last one did, and says what it waited for in vain.
func (c *blocksRun) timeRemotes(ctx context.Context, when string, ch peerChange) string {
	first := map[string]time.Time{}
	var last map[string]status.DevicePeers
	err := wait.PollUntilContextTimeout(ctx, blocksPoll, remoteWithin, true, func(ctx context.Context) (bool, error) {
		last = c.readRemotes(ctx)
		for name, d := range last {
			if _, done := first[name]; !done && ch.shownBy(d) {
				first[name] = time.Now()
			}
		}
		return len(first) == len(c.remotes), nil
	})
	if err != nil {
		var pending []string
		for _, n := range c.remotes {
			d, read := last[n.Name]
			switch _, done := first[n.Name]; {
			case done:
			case !read:
				pending = append(pending, n.Name+" (unreadable)")
			default:
				pending = append(pending, fmt.Sprintf("%s (allowed IPs %v, routes %v)", n.Name, d.AllowedIPs[ch.node], d.Routes))
			}
		}
		return fmt.Sprintf("%s: not every remote node's %s %s within %s of %s: %s", when, c.device, ch, remoteWithin, ch.what, strings.Join(pending, "; "))
	}
	slowest, at := latest(first)
	fmt.Fprintf(c.l.Out(), "  %s: every remote node's %s %s (allowed IPs and route) %s after %s, the last %s\n",
		when, c.device, ch, at.Sub(ch.since).Round(10*time.Millisecond), ch.what, slowest)
	return ""
}

// readRemotes reads every remote node's device, by node; a node that cannot be read is left
// out.
func (c *blocksRun) readRemotes(ctx context.Context) map[string]status.DevicePeers {
	read := make([]*status.DevicePeers, len(c.remotes))
	var wg sync.WaitGroup
	for i, n := range c.remotes {
		wg.Go(func() {
			if d, err := status.ReadDevicePeers(ctx, c.rec, n, layout.CalicoCluster, c.names[n.Cluster]); err == nil {
				read[i] = &d
			}
		})
	}
	wg.Wait()
	out := map[string]status.DevicePeers{}
	for i, d := range read {
		if d != nil {
			out[c.remotes[i].Name] = *d
		}
	}
	return out
}

// settle waits until the blocks have settled: none is to be released, and every remote node's
// device gives each node of the Calico-way cluster what its blocks make it, on two reads in a
// row with the same changes. Unless want is negative, it checks that each device made want
// peer operations since the last settle, and prints what each made.
func (c *blocksRun) settle(ctx context.Context, when string, want int) []string {
	var devices map[string]status.DevicePeers
	var pending string
	err := wait.PollUntilContextTimeout(ctx, time.Second, releaseWithin, true, func(ctx context.Context) (bool, error) {
		now, why := c.agreed(ctx)
		if why != "" {
			pending, devices = why, nil
			return false, nil
		}
		same := devices != nil && maps.EqualFunc(devices, now, func(a, b status.DevicePeers) bool { return maps.Equal(a.Changes, b.Changes) })
		pending, devices = "the devices agree, but keep changing", now
		return same, nil
	})
	if err != nil {
		return []string{fmt.Sprintf("%s: the IPAM blocks of %s and the remote nodes' %s did not settle within %s: %s", when, layout.CalicoCluster, c.device, releaseWithin, pending)}
	}
	before := c.settled
	c.settled = devices
	if want < 0 {
		fmt.Fprintf(c.l.Out(), "  %s: the %d remote nodes' %s agree with %s's IPAM blocks\n", when, len(devices), c.device, layout.CalicoCluster)
		return nil
	}
	var made, problems []string
	for _, n := range c.remotes {
		ops, delta := changeDelta(before[n.Name].Changes, devices[n.Name].Changes)
		made = append(made, fmt.Sprintf("%s %s", n.Name, delta))
		if ops != float64(want) {
			problems = append(problems, fmt.Sprintf("%s: %s's %s made %v peer operations (%s), want %d", when, n.Name, c.device, ops, delta, want))
		}
	}
	fmt.Fprintf(c.l.Out(), "  %s: changes to %s: %s\n", when, c.device, strings.Join(made, "; "))
	return problems
}

// agreed reads the blocks and the remote nodes' devices, and says why they do not agree ("" when
// they do).
func (c *blocksRun) agreed(ctx context.Context) (map[string]status.DevicePeers, string) {
	blocks, err := status.IPAMBlocks(ctx, c.rec)
	if err != nil {
		return nil, fmt.Sprintf("reading %s's IPAM blocks: %v", layout.CalicoCluster, err)
	}
	if r := releasable(blocks); len(r) > 0 {
		return nil, fmt.Sprintf("empty blocks to be released: %s", strings.Join(r, ", "))
	}
	want, _ := calicoipam.Prefixes(blocks, nil)
	devices := c.readRemotes(ctx)
	for _, n := range c.remotes {
		d, ok := devices[n.Name]
		if !ok {
			return nil, fmt.Sprintf("%s's %s cannot be read", n.Name, c.device)
		}
		if diff := peerDiff(want, d); len(diff) > 0 {
			return nil, fmt.Sprintf("%s's %s: %s", n.Name, c.device, strings.Join(diff, "; "))
		}
	}
	return devices, ""
}

// liveBlocks are the blocks not being deleted.
func liveBlocks(blocks []*calicoipam.Block) []*calicoipam.Block {
	var out []*calicoipam.Block
	for _, b := range blocks {
		if !b.Deleted && b.DeletionTimestamp == nil {
			out = append(out, b)
		}
	}
	return out
}

// affineTo is the node block is affine to, "" for none.
func affineTo(b *calicoipam.Block) string {
	node, ok := strings.CutPrefix(b.Affinity, "host:")
	if !ok {
		return ""
	}
	return node
}

// freeAddresses counts the free addresses of the live blocks of pool affine to node, which
// calico-ipam hands out to node's pods before it claims another block, and lists those blocks.
// A block's allocations are its holders: calico-ipam records the node of every allocation it
// makes, a pod's or a tunnel's.
func freeAddresses(blocks []*calicoipam.Block, pool netip.Prefix, node string) (int, []string) {
	free := 0
	var cidrs []string
	for _, b := range liveBlocks(blocks) {
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil || affineTo(b) != node || !pool.Contains(cidr.Addr()) || cidr.Bits() < pool.Bits() {
			continue
		}
		free += 1<<(cidr.Addr().BitLen()-cidr.Bits()) - len(b.Holders)
		cidrs = append(cidrs, b.CIDR)
	}
	return free, cidrs
}

// blocksOf are the live blocks affine to node.
func blocksOf(blocks []*calicoipam.Block, node string) []string {
	var out []string
	for _, b := range liveBlocks(blocks) {
		if affineTo(b) == node {
			out = append(out, b.CIDR)
		}
	}
	return out
}

// newBlocks are the live blocks of after affine to node that are not live in before.
func newBlocks(before, after []*calicoipam.Block, node string) []*calicoipam.Block {
	old := liveBlocks(before)
	var out []*calicoipam.Block
	for _, b := range liveBlocks(after) {
		if affineTo(b) == node && !slices.ContainsFunc(old, func(o *calicoipam.Block) bool { return o.Name == b.Name }) {
			out = append(out, b)
		}
	}
	return out
}

// releasable are the blocks kube-controllers releases once they have been so for its grace:
// empty, and affine to a node that has others.
func releasable(blocks []*calicoipam.Block) []string {
	live := liveBlocks(blocks)
	perNode := map[string]int{}
	for _, b := range live {
		perNode[affineTo(b)]++
	}
	var out []string
	for _, b := range live {
		if node := affineTo(b); node != "" && len(b.Holders) == 0 && perNode[node] > 1 {
			out = append(out, fmt.Sprintf("%s (%s)", b.CIDR, node))
		}
	}
	return out
}

// borrowedProblem says how a pod on node with the address of host is not what the scenario
// makes it, "" when it is: on borrower, with an address of pool from a block affine to owner.
func borrowedProblem(blocks []*calicoipam.Block, host netip.Prefix, node, borrower, owner string, pool netip.Prefix) string {
	if node != borrower {
		return fmt.Sprintf("it runs on %s, not %s", node, borrower)
	}
	if !pool.Contains(host.Addr()) {
		return fmt.Sprintf("its address %s is not in %s", host.Addr(), pool)
	}
	live := liveBlocks(blocks)
	i := slices.IndexFunc(live, func(b *calicoipam.Block) bool {
		cidr, err := netip.ParsePrefix(b.CIDR)
		return err == nil && cidr.Contains(host.Addr())
	})
	if i < 0 {
		return fmt.Sprintf("no block holds its address %s", host.Addr())
	}
	if affineTo(live[i]) != owner {
		return fmt.Sprintf("its address %s is of block %s, affine to %q, not %s", host.Addr(), live[i].CIDR, affineTo(live[i]), owner)
	}
	return ""
}

// latest is the node of first seen last, and when.
func latest(first map[string]time.Time) (string, time.Time) {
	var node string
	var at time.Time
	for _, n := range slices.Sorted(maps.Keys(first)) {
		if first[n].After(at) {
			node, at = n, first[n]
		}
	}
	return node, at
}

// changeDelta is what a device's changes (by operation) grew by from before to after: the peer
// operations, and every operation's growth ("peer_update +1, route_add +1").
func changeDelta(before, after map[string]float64) (float64, string) {
	ops := maps.Clone(after)
	maps.Copy(ops, before)
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		if d := after[op] - before[op]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s %+g", op, d))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return status.PeerOps(after) - status.PeerOps(before), strings.Join(parts, ", ")
}

// peerDiff says how device d differs from what want (the prefixes of each node of the remote)
// makes it: each peer's allowed IPs those of its node, the routes all of them.
func peerDiff(want map[string][]netip.Prefix, d status.DevicePeers) []string {
	wantIPs := map[string][]string{}
	var wantRoutes []string
	for node, ps := range want {
		for _, p := range ps {
			wantIPs[node] = append(wantIPs[node], p.String())
			wantRoutes = append(wantRoutes, p.String())
		}
	}
	nodes := maps.Clone(wantIPs)
	maps.Copy(nodes, d.AllowedIPs)
	var diff []string
	for _, node := range slices.Sorted(maps.Keys(nodes)) {
		if got, want := sorted(d.AllowedIPs[node]), sorted(wantIPs[node]); !slices.Equal(got, want) {
			diff = append(diff, fmt.Sprintf("peer %s has allowed IPs %v, want %v", node, got, want))
		}
	}
	if got, want := sorted(d.Routes), sorted(wantRoutes); !slices.Equal(got, want) {
		diff = append(diff, fmt.Sprintf("routes %v, want %v", got, want))
	}
	return diff
}

// sorted is a sorted copy of s.
func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
