package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// watchLocalNode adds an informer on this node's Node alone. A change of its addresses or
// annotations (an operator's endpoint override, an address the cloud assigned late, one of ours
// removed by hand) syncs every remote again, which publishes what changed.
func (c *Peering) watchLocalNode(local kubernetes.Interface) {
	factory := informers.NewSharedInformerFactoryWithOptions(local, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.opts.NodeName).String()
		}))
	inf := factory.Core().V1().Nodes()
	c.node = inf.Lister()
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueAll() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || !maps.Equal(o.Annotations, n.Annotations) || !slices.Equal(o.Status.Addresses, n.Status.Addresses) {
				c.enqueueAll()
			}
		},
	})
	c.base.WatchLocal(factory, inf.Informer().HasSynced)
}

func (c *Peering) enqueueAll() {
	for name := range c.remotes {
		c.base.Queue.Add(name)
	}
}

// syncNode sets the MTU of the remote's device from the path to its peers (endpoints are
// where the device sends to each) and publishes this node's annotations for the remote, with
// the term of its election when it is the cluster's gateway toward it (0: it is not).
func (c *Peering) syncNode(ctx context.Context, rc *remoteCache, desired []peers.Peer, endpoints map[wgtypes.Key]*net.UDPAddr, now time.Time, term uint64) error {
	node, err := c.node.Get(c.opts.NodeName)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_WG_NODE_NAME: node %s: %w", c.opts.NodeName, err)
	}
	addr, reachable := c.endpointAddress(node, rc.dev.Remote)
	own, err := c.syncMTU(rc, desired, endpoints, addr, now)
	if err != nil {
		return err
	}
	c.noteReachability(rc, reachable)
	return c.patchAnnotations(ctx, node, annotationsOf(rc, addr, reachable, own, term), false)
}

// endpointAddress is the address this node publishes for remote: its usable endpoint override,
// else the first address of the first of the remote's address types; reachable is false when
// there is none.
func (c *Peering) endpointAddress(node *corev1.Node, remote string) (addr netip.Addr, reachable bool) {
	if addr := c.override(node); addr.IsValid() {
		return addr, true
	}
	return endpoint.FirstOfTypes(node, c.opts.EndpointAddressTypes.For(remote))
}

// override is the node's usable endpoint override, invalid when there is none. One that is set
// but unusable is logged once and counted, and the address types apply.
func (c *Peering) override(node *corev1.Node) netip.Addr {
	addr, set, err := endpoint.Override(node)
	bad := ""
	if err != nil {
		bad = node.Annotations[endpoint.OverrideAnnotation]
	}
	c.mu.Lock()
	changed := bad != c.badOverride
	c.badOverride = bad
	c.mu.Unlock()
	if changed && err != nil {
		c.log.Warn("the node's endpoint override is not usable: publishing the endpoint of SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES", "node", node.Name, "err", err)
	}
	c.metrics.badOverride.Set(metrics.Bool(err != nil))
	if !set || err != nil {
		return netip.Addr{}
	}
	return addr
}

// noteReachability logs once when this node starts publishing no endpoint for a remote: the
// remote's nodes can then only answer the handshakes it starts, which its keepalive keeps up.
func (c *Peering) noteReachability(rc *remoteCache, reachable bool) {
	rc.mu.Lock()
	changed := rc.unreachable == reachable
	rc.unreachable = !reachable
	rc.mu.Unlock()
	if !changed || reachable {
		return
	}
	types := fmt.Sprint(c.opts.EndpointAddressTypes.For(rc.dev.Remote))
	if c.opts.Keepalive == 0 {
		c.log.Warn("this node has no address of the remote's endpoint address types and publishes no endpoint, and SEMAPHORE_WG_KEEPALIVE is 0: the remote can never reach it",
			"remote", rc.dev.Remote, "types", types)
		return
	}
	c.log.Info("this node has no address of the remote's endpoint address types and publishes no endpoint: the remote's nodes answer the handshakes it starts",
		"remote", rc.dev.Remote, "types", types)
}

// annotationsOf are this node's annotations for the remote of rc: its public key, its endpoint
// at addr (none, to be removed, when it is not reachable), its own path MTU (none when 0) and,
// when it is the cluster's gateway toward the remote, the term of its election (none when 0).
func annotationsOf(rc *remoteCache, addr netip.Addr, reachable bool, pathMTU int, term uint64) map[string]*string {
	key := rc.dev.Key.PublicKey().String()
	want := map[string]*string{
		peers.PubKeyAnnotation(rc.dev.Remote):   &key,
		peers.EndpointAnnotation(rc.dev.Remote): nil,
		peers.PathMTUAnnotation(rc.dev.Remote):  nil,
		peers.GatewayAnnotation(rc.dev.Remote):  nil,
	}
	if term > 0 {
		t := peers.GatewayTerm(term)
		want[peers.GatewayAnnotation(rc.dev.Remote)] = &t
	}
	if reachable {
		e := netip.AddrPortFrom(addr, uint16(rc.dev.ListenPort)).String()
		want[peers.EndpointAnnotation(rc.dev.Remote)] = &e
	}
	if pathMTU > 0 {
		p := strconv.Itoa(pathMTU)
		want[peers.PathMTUAnnotation(rc.dev.Remote)] = &p
	}
	return want
}

// patchAnnotations makes node's annotations hold want (nil: absent) and, with removeStale, none
// of ours but those (the remotes no longer configured), in one merge patch of what differs.
// Annotations that are not ours (an operator's endpoint override) are never touched.
func (c *Peering) patchAnnotations(ctx context.Context, node *corev1.Node, want map[string]*string, removeStale bool) error {
	patch := annotationPatch(node.Annotations, want, removeStale)
	if err := patchNodeAnnotations(ctx, c.local, c.opts.NodeName, patch); err != nil {
		return err
	}
	if len(patch) > 0 {
		c.log.Info("published public keys, endpoints and path MTUs", "node", c.opts.NodeName, "annotations", len(patch))
	}
	return nil
}

// annotationPatch is what changes annotations into want (nil: absent) and, with removeStale,
// removes every other annotation of ours.
func annotationPatch(annotations map[string]string, want map[string]*string, removeStale bool) map[string]*string {
	patch := map[string]*string{}
	for k, w := range want {
		v, has := annotations[k]
		if (w == nil && has) || (w != nil && (!has || v != *w)) {
			patch[k] = w
		}
	}
	for k := range annotations {
		if _, wanted := want[k]; removeStale && !wanted && peers.IsOwnAnnotation(k) {
			patch[k] = nil
		}
	}
	return patch
}

// patchNodeAnnotations applies patch to Node name's annotations in one merge patch; an empty
// patch writes nothing.
func patchNodeAnnotations(ctx context.Context, local kubernetes.Interface, name string, patch map[string]*string) error {
	if len(patch) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return err
	}
	if _, err := local.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotating node %s: %w", name, err)
	}
	return nil
}

// Unpublish removes every annotation of ours from Node name (the uninstall mode), and returns
// how many it removed.
func Unpublish(ctx context.Context, local kubernetes.Interface, name string) (int, error) {
	node, err := local.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading node %s: %w", name, err)
	}
	patch := annotationPatch(node.Annotations, nil, true)
	return len(patch), patchNodeAnnotations(ctx, local, name, patch)
}
