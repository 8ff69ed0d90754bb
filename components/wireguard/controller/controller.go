// Package controller keeps, on one node, a WireGuard device per remote cluster in line with that
// cluster's nodes: informers on each remote's Nodes feed a workqueue keyed by remote; each sync
// computes the desired peers and routes with package peers and applies only the difference, so
// unchanged peers keep their sessions.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Devices is what the controller needs of the host's WireGuard devices, routes and underlay.
type Devices interface {
	Ensure(name string, key wgtypes.Key, listenPort, mtu int) error
	Peers(name string) ([]wgtypes.Peer, error)
	ConfigurePeers(name string, changes []wgtypes.PeerConfig) error
	SyncRoutes(name string, want []net.IPNet) (added, removed int, err error)
	// SyncGatewayRoutes makes the routes through a gateway (next hops on this cluster's
	// network) be want; without prune, those not wanted are left.
	SyncGatewayRoutes(want map[netip.Prefix]netip.Addr, prune bool) (added, replaced, removed int, err error)
	// Delete removes a device with its routes; an absent one is no error.
	Delete(name string) error
	// MTU reads the MTU of a device; SetMTU changes it when it differs.
	MTU(name string) (int, error)
	SetMTU(name string, mtu int) error
	// PathMTU is the MTU of the underlay route toward dst; DefaultPathMTU that of the default
	// route of local's family or, without one, of the link holding local.
	PathMTU(dst netip.Addr) (int, error)
	DefaultPathMTU(local netip.Addr) (int, error)
	// Implementation is the devices' WireGuard: "kernel" or "userspace".
	Implementation() string
}

// RemoteDevice is the device of one remote cluster.
type RemoteDevice struct {
	Remote     string
	Device     string
	Key        wgtypes.Key
	ListenPort int
}

// Options configure a Peering.
type Options struct {
	LocalCluster string
	NodeName     string
	// EndpointAddressTypes are, per remote, the Node address types this node publishes its
	// endpoint from, in order of preference (endpoint.DefaultTypes for a remote without a list);
	// the Node's endpoint.OverrideAnnotation wins over them.
	EndpointAddressTypes endpoint.Types
	// MTU is, per remote, the MTU of its device: a fixed one, or auto (the zero value: auto for
	// every remote).
	MTU          mtu.Settings
	Keepalive    time.Duration
	ResyncPeriod time.Duration
	// PodCIDRsFrom says, per remote, where its nodes' pod addresses come from.
	PodCIDRsFrom Sources
	// Guard refuses the pod CIDRs a remote may not have routed to it; this node's own ranges
	// are added to its local ones. Nil holds every remote to the rules alone.
	Guard *addrguard.Guard
	// EndpointRanges are, per remote, where its nodes' endpoints may lie without being one of
	// their own addresses (nodes behind a NAT).
	EndpointRanges addrguard.Ranges
	// MaxPeersPerRemote is the most peers of one remote; 0 is no limit.
	MaxPeersPerRemote int
	// Topology says, per remote, whether this cluster reaches it node to node or through
	// gateways.
	Topology Topologies
	// Gateways are this node's parts in the elections of the gateway toward each remote reached
	// through gateways, when this node is a gateway node; nil for a node that is not one.
	Gateways map[string]Election
	// GatewayNodes selects this cluster's gateway nodes, among which the others find the
	// active gateway.
	GatewayNodes labels.Selector
}

// Peering keeps this node's WireGuard devices peered with the nodes of the remote clusters.
type Peering struct {
	opts    Options
	log     *slog.Logger
	local   kubernetes.Interface
	devices Devices
	metrics *Metrics

	// base keys the queue by remote name.
	base    *multiremote.Controller[string]
	remotes map[string]*remoteCache
	// localRanges are this cluster's own ranges as this node sees them (its pod CIDRs and
	// addresses), which no remote's IPAM block may take over. Set by Setup, before Run.
	localRanges []netip.Prefix
	// devicesSet is true once Setup has set the devices up: before, while a rollout's
	// successor stands by, they are its predecessor's, whose statistics are not ours to export.
	devicesSet atomic.Bool
	// node reads this node's Node from the local informer (publish.go).
	node corelisters.NodeLister
	// gatewayNodes reads this cluster's gateway nodes (topology.go), when it reaches a remote
	// through gateways.
	gatewayNodes corelisters.NodeLister

	// gwRoutes are the routes through this cluster's gateway each remote reached through
	// gateways wants (topology.go), once it synced.
	gwMu     sync.Mutex
	gwRoutes map[string]map[netip.Prefix]netip.Addr

	mu sync.Mutex
	// badOverride is the unusable endpoint override last logged, to log a new one once.
	badOverride string
}

type remoteCache struct {
	*multiremote.Remote
	dev   RemoteDevice
	nodes corelisters.NodeLister

	// blocks holds the remote's IPAM blocks (as *calicoipam.Block) when its pod addresses come
	// from Calico IPAM; nil otherwise.
	blocks cache.Store

	// path is what the own path MTU toward the remote was last read for (pathmtu.go). Only the
	// remote's sync reads and writes it, and the workqueue runs one sync of a key at a time.
	path pathReading

	mu      sync.Mutex
	byKey   map[wgtypes.Key]peerRecord // of the last desired peers
	skipped map[string]string          // node -> reason, to log a skip once
	limited int                        // nodes skipped for the peer limit, to log a change once
	// skippedBlocks is block -> reason, to log a skipped IPAM block once.
	skippedBlocks map[string]string
	// unreachable is whether this node last published no endpoint for the remote, and
	// badPathMTUs how many of its peers publish an unusable path MTU: to log a change once.
	unreachable bool
	badPathMTUs int
	// gateway is the active gateway toward the remote this node last saw, when the cluster
	// reaches it through gateways: to count a change once.
	gateway string
}

// peerRecord is what the controller knows of a desired peer, for its metrics.
type peerRecord struct {
	Node string
	// EndpointPublished is whether the node publishes an endpoint (else it must reach us).
	EndpointPublished bool
	// Since is when this process first configured the peer, Created when it last created it
	// (first or afresh, peers.Retries).
	Since, Created time.Time
}

// New wires an informer on the Nodes of each remote, and one on its IPAM blocks when its pod
// addresses come from Calico IPAM.
func New(opts Options, local kubernetes.Interface, remotes []remote.Cluster, devs []RemoteDevice, devices Devices, health *remote.Health, m *Metrics, queueMetrics workqueue.MetricsProvider, log *slog.Logger) (*Peering, error) {
	if opts.Guard == nil {
		opts.Guard = addrguard.New(nil)
	}
	c := &Peering{opts: opts, log: log, local: local, devices: devices, metrics: m, remotes: map[string]*remoteCache{}}
	c.base = multiremote.New(multiremote.Config[string]{
		Queue:          "wireguard",
		QueueMetrics:   queueMetrics,
		Sync:           c.sync,
		Remote:         func(r string) string { return r },
		Counters:       multiremote.Counters{Reconcile: m.reconcile},
		Health:         health,
		Log:            log,
		OnRemoteSynced: func(r *multiremote.Remote) { c.base.Queue.Add(r.Name) },
	})
	byName := map[string]RemoteDevice{}
	for _, d := range devs {
		byName[d.Remote] = d
	}
	for _, r := range remotes {
		rc := &remoteCache{Remote: c.base.AddRemote(r.Name), dev: byName[r.Name], byKey: map[wgtypes.Key]peerRecord{}, skipped: map[string]string{}, skippedBlocks: map[string]string{}}
		handler := rc.Handler(func(any) { c.base.Queue.Add(r.Name) })
		factory := informers.NewSharedInformerFactoryWithOptions(r.Client, opts.ResyncPeriod, informers.WithTransform(remoteNodeTransform(opts.LocalCluster)))
		inf := factory.Core().V1().Nodes()
		rc.nodes = inf.Lister()
		rc.Watch(factory, inf.Informer().HasSynced)
		_, _ = inf.Informer().AddEventHandler(handler)
		if opts.PodCIDRsFrom.For(r.Name) == SourceCalicoIPAM {
			if err := rc.watchBlocks(r, opts.ResyncPeriod, handler); err != nil {
				return nil, fmt.Errorf("IPAM blocks of remote %s: %w", r.Name, err)
			}
			m.initBlocks(r.Name)
		}
		c.remotes[r.Name] = rc
		if role, _ := c.roleOf(r.Name); role != roleMember {
			m.deviceInfo.WithLabelValues(r.Name, rc.dev.Device, devices.Implementation()).Set(1)
		}
		if opts.Topology.For(r.Name) == TopologyGateway {
			m.initGateway(r.Name)
		}
	}
	c.watchLocalNode(local)
	c.watchGatewayNodes(local)
	m.stats.source = c.stats
	m.stats.log = log
	return c, nil
}

// watchBlocks adds an informer on the remote's IPAM blocks that keeps only what
// calicoipam.Prefixes reads of each.
func (rc *remoteCache) watchBlocks(r remote.Cluster, resync time.Duration, handler cache.ResourceEventHandler) error {
	dyn, err := dynamic.NewForConfig(r.Config)
	if err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, resync)
	inf := factory.ForResource(calicoipam.Resource).Informer()
	if err := inf.SetTransform(calicoipam.Transform); err != nil {
		return err
	}
	_, _ = inf.AddEventHandler(handler)
	rc.blocks = inf.GetStore()
	rc.Watch(factory, inf.HasSynced)
	return nil
}

// Setup creates the devices (leaving in-sync ones untouched) and publishes this node's public
// keys, endpoints and path MTUs in its annotations, removing those of remotes no longer
// configured.
func (c *Peering) Setup(ctx context.Context) error {
	node, err := c.local.CoreV1().Nodes().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("SEMAPHORE_WG_NODE_NAME: node %s: %w", c.opts.NodeName, err)
	}
	c.localRanges = localRanges(node, c.override(node))
	c.opts.Guard.SetLocal("this node", c.localRanges)
	want := map[string]*string{}
	for _, rc := range c.remotes {
		r, _ := c.roleOf(rc.dev.Remote)
		if r == roleMember {
			// No device for the remote on a node that is no gateway node, and nothing published.
			maps.Copy(want, noAnnotationsFor(rc.dev.Remote))
			continue
		}
		addr, reachable := c.endpointAddress(node, rc.dev.Remote)
		deviceMTU, own := c.startMTU(rc, addr)
		if err := c.devices.Ensure(rc.dev.Device, rc.dev.Key, rc.dev.ListenPort, deviceMTU); err != nil {
			return fmt.Errorf("device %s for remote %s: %w", rc.dev.Device, rc.dev.Remote, err)
		}
		c.noteReachability(rc, reachable)
		if r.holdsPeers() {
			maps.Copy(want, annotationsOf(rc, addr, reachable, own, 0))
		} else {
			// A standby: its device is ready, but it publishes nothing until it is elected.
			maps.Copy(want, noAnnotationsFor(rc.dev.Remote))
		}
	}
	c.devicesSet.Store(true)
	if len(c.throughGateways()) == 0 {
		// No remote is reached through gateways (any more): routes to a gateway left from when
		// one was would keep its destinations from the devices' own routes.
		if _, _, removed, err := c.devices.SyncGatewayRoutes(nil, true); err != nil {
			return fmt.Errorf("removing routes to a gateway: %w", err)
		} else if removed > 0 {
			c.log.Info("removed the routes to a gateway left from when a remote was reached through gateways", "routes", removed)
		}
	}
	return c.patchAnnotations(ctx, node, want, true)
}

// localRanges are the node's pod CIDRs, its addresses and its endpoint override (invalid when
// it has none).
func localRanges(node *corev1.Node, override netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	if override.IsValid() {
		out = append(out, netip.PrefixFrom(override, override.BitLen()))
	}
	for _, c := range podCIDRs(node) {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	for _, a := range node.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	return out
}

// Run starts the informers and workers and blocks until ctx is done. A remote whose API server
// is unreachable keeps its peers: nothing is removed until its cache has synced and says so.
func (c *Peering) Run(ctx context.Context, workers int) { c.base.Run(ctx, workers) }

// A rollout's successor warms its caches while it stands by (daemon.Base.RunControllerAfter).
var _ interface{ Warm(context.Context) } = (*Peering)(nil)

// Warm fills the caches (this cluster's Nodes, each remote's Nodes or IPAM blocks) before Run:
// while a rollout's successor stands by, so that it sets the peers as soon as it has the
// devices.
func (c *Peering) Warm(ctx context.Context) { c.base.Warm(ctx) }

// sync makes the device of one remote hold exactly the desired peers and routes, with the MTU
// of the path to them, and publishes this node's annotations for the remote.
func (c *Peering) sync(ctx context.Context, name string) (reconcile.Result, error) {
	rc := c.remotes[name]
	if rc == nil || !rc.Ready() {
		return reconcile.Skipped, nil
	}
	r, term := c.roleOf(name)
	if !r.holdsPeers() {
		if err := c.syncThroughGateway(ctx, rc, r); err != nil {
			return reconcile.Error, err
		}
		return reconcile.Success, nil
	}
	if r == roleGateway {
		c.noteGateway(rc, r, c.opts.NodeName)
		// Its pods' traffic to the remote goes through the device again, not to another gateway.
		if err := c.setGatewayRoutes(name, nil); err != nil {
			return reconcile.Error, err
		}
	}
	desired, through, err := c.desiredPeers(rc)
	if err != nil {
		return reconcile.Error, err
	}
	actual, err := c.devices.Peers(rc.dev.Device)
	if err != nil {
		return reconcile.Error, err
	}
	now := time.Now()
	changes := peers.Changes(desired, actual, c.opts.Keepalive, now)
	if len(changes) > 0 {
		if err := c.devices.ConfigurePeers(rc.dev.Device, changes); err != nil {
			return reconcile.Error, fmt.Errorf("configuring peers of %s: %w", rc.dev.Device, err)
		}
		c.countChanges(rc, actual, changes)
	}
	c.recordPeers(rc, desired, now)
	if through || r == roleGateway {
		// Toward a gateway, or as one: a first handshake lost to a load balancer or a key not
		// yet known on the other side is tried again in a second, not WireGuard's five.
		if err := c.retryNewPeers(rc, desired, actual, now); err != nil {
			return reconcile.Error, err
		}
	}
	if until, kept := peers.KeptUntil(desired, actual, now); kept {
		// A roamed endpoint is kept while its session lives: look again when it may have ended.
		c.base.Queue.AddAfter(name, until.Sub(now)+time.Second)
	}
	added, removed, err := c.devices.SyncRoutes(rc.dev.Device, peers.Routes(desired))
	c.metrics.changes.WithLabelValues(name, "route_add").Add(float64(added))
	c.metrics.changes.WithLabelValues(name, "route_remove").Add(float64(removed))
	if err != nil {
		return reconcile.Error, fmt.Errorf("routes of %s: %w", rc.dev.Device, err)
	}
	if err := c.syncNode(ctx, rc, desired, endpointsAfter(actual, changes), now, term); err != nil {
		return reconcile.Error, err
	}
	return reconcile.Success, nil
}

// desiredPeers are the peers the remote's nodes make, its skipped nodes recorded; through is
// whether the remote reaches us through its gateway.
func (c *Peering) desiredPeers(rc *remoteCache) (desired []peers.Peer, through bool, err error) {
	nodes, err := c.remoteNodes(rc)
	if err != nil {
		return nil, false, err
	}
	name := rc.dev.Remote
	rules := peers.Rules{
		Guard:          c.opts.Guard.For(name),
		EndpointRanges: c.opts.EndpointRanges[name],
		MaxPeers:       c.opts.MaxPeersPerRemote,
	}
	desire := peers.Desired
	if through = peers.ThroughGateway(c.opts.LocalCluster, nodes); through {
		// The remote reaches us through its active gateway: one peer for all its pods.
		desire = peers.DesiredThroughGateway
	}
	desired, skipped := desire(c.opts.LocalCluster, nodes, rules)
	// A remote node publishing our own key (a copied key directory) cannot be a peer:
	// WireGuard ignores it, and asking for it again on every sync would never settle.
	own := rc.dev.Key.PublicKey()
	desired = slices.DeleteFunc(desired, func(p peers.Peer) bool {
		if p.PublicKey == own {
			skipped = append(skipped, peers.Skip{Node: p.Node, Reason: peers.ReasonDuplicateKey, Detail: "the node publishes this device's own public key"})
			return true
		}
		return false
	})
	c.recordSkips(rc, skipped)
	return desired, through, nil
}

// retryNewPeers creates afresh the remote's new peers that have completed no handshake
// (peers.Retries), and syncs the remote again in peers.RetryEvery while one may need it.
// actual is the device's peers as the sync read them: a peer it added since is not retried
// (it was just created), and their handshakes are as recent as a retry needs.
func (c *Peering) retryNewPeers(rc *remoteCache, desired []peers.Peer, actual []wgtypes.Peer, now time.Time) error {
	rc.mu.Lock()
	changes, retried, again := peers.Retries(desired, actual, c.opts.Keepalive, func(k wgtypes.Key) (peers.Configured, bool) {
		r, ok := rc.byKey[k]
		return peers.Configured{First: r.Since, Last: r.Created}, ok
	}, now)
	rc.mu.Unlock()
	if again {
		c.base.Queue.AddAfter(rc.dev.Remote, peers.RetryEvery)
	}
	if len(changes) == 0 {
		return nil
	}
	if err := c.devices.ConfigurePeers(rc.dev.Device, changes); err != nil {
		return fmt.Errorf("creating afresh the new peers of %s: %w", rc.dev.Device, err)
	}
	c.metrics.changes.WithLabelValues(rc.dev.Remote, "peer_retry").Add(float64(len(retried)))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, k := range retried {
		if r, ok := rc.byKey[k]; ok {
			r.Created = now
			rc.byKey[k] = r
		}
	}
	return nil
}

// recordPeers remembers the desired peers for the metrics, each with when it was first
// configured.
func (c *Peering) recordPeers(rc *remoteCache, desired []peers.Peer, now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byKey := make(map[wgtypes.Key]peerRecord, len(desired))
	for _, p := range desired {
		since, created := now, now
		if prev, ok := rc.byKey[p.PublicKey]; ok {
			since, created = prev.Since, prev.Created
		}
		byKey[p.PublicKey] = peerRecord{Node: p.Node, EndpointPublished: p.Endpoint != nil, Since: since, Created: created}
	}
	rc.byKey = byKey
}

// remoteNodes are the remote's nodes with their pod CIDRs from the remote's source.
func (c *Peering) remoteNodes(rc *remoteCache) ([]peers.Node, error) {
	list, err := rc.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var fromBlocks map[string][]netip.Prefix
	if rc.blocks != nil {
		fromBlocks = c.blockPrefixes(rc)
	}
	nodes := make([]peers.Node, 0, len(list))
	for _, n := range list {
		cidrs := podCIDRs(n)
		if rc.blocks != nil {
			cidrs = make([]string, 0, len(fromBlocks[n.Name]))
			for _, p := range fromBlocks[n.Name] {
				cidrs = append(cidrs, p.String())
			}
		}
		nodes = append(nodes, peers.Node{Name: n.Name, Annotations: n.Annotations, PodCIDRs: cidrs, Addresses: nodeAddresses(n)})
	}
	return nodes, nil
}

// nodeAddresses are the node's InternalIP and ExternalIP addresses, those its endpoint may be.
// Its host names (Hostname, InternalDNS, ExternalDNS) are not addresses.
func nodeAddresses(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			out = append(out, a.Address)
		}
	}
	return out
}

// blockPrefixes are the prefixes of each remote node according to the remote's IPAM blocks.
func (c *Peering) blockPrefixes(rc *remoteCache) map[string][]netip.Prefix {
	objs := rc.blocks.List()
	blocks := make([]*calicoipam.Block, 0, len(objs))
	for _, o := range objs {
		if b, ok := o.(*calicoipam.Block); ok {
			blocks = append(blocks, b)
		}
	}
	byNode, skipped := calicoipam.Prefixes(blocks, c.localRanges)
	counts := map[string]int{}
	now := map[string]string{}
	for _, s := range skipped {
		counts[s.Reason]++
		now[s.Block] = s.Reason
		if rc.skippedBlocks[s.Block] != s.Reason {
			c.log.Warn("remote IPAM block skipped", "remote", rc.dev.Remote, "block", s.Block, "reason", s.Reason, "err", s.Detail)
		}
	}
	rc.skippedBlocks = now // only the remote's sync reads and writes it
	for _, reason := range calicoipam.Reasons {
		c.metrics.skippedBlocks.WithLabelValues(rc.dev.Remote, reason).Set(float64(counts[reason]))
	}
	return byNode
}

func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func (c *Peering) countChanges(rc *remoteCache, actual []wgtypes.Peer, changes []wgtypes.PeerConfig) {
	had := map[wgtypes.Key]bool{}
	for _, a := range actual {
		had[a.PublicKey] = true
	}
	for _, ch := range changes {
		op := "peer_update"
		switch {
		case ch.Remove:
			op = "peer_remove"
		case !had[ch.PublicKey]:
			op = "peer_add"
		}
		// The device manager logs each change; counting it here adds the remote.
		c.metrics.changes.WithLabelValues(rc.dev.Remote, op).Inc()
	}
}

// recordSkips sets the skipped-peers gauge and logs each node's skip once, when it starts;
// nodes over the peer limit, which may be many, are logged as one line when their number
// changes.
func (c *Peering) recordSkips(rc *remoteCache, skipped []peers.Skip) {
	counts := map[string]int{}
	now := map[string]string{}
	for _, s := range skipped {
		counts[s.Reason]++
		now[s.Node] = s.Reason
		if s.Reason == peers.ReasonNotAnnotated || s.Reason == peers.ReasonPeerLimit {
			continue
		}
		rc.mu.Lock()
		prev := rc.skipped[s.Node]
		rc.mu.Unlock()
		if prev != s.Reason {
			c.log.Warn("remote node skipped", "remote", rc.dev.Remote, "peer", s.Node, "reason", s.Reason, "err", s.Detail)
		}
	}
	rc.mu.Lock()
	rc.skipped = now
	limited, before := counts[peers.ReasonPeerLimit], rc.limited
	rc.limited = limited
	rc.mu.Unlock()
	if limited != before && limited > 0 {
		c.log.Warn("remote has more nodes than the peer limit: the first by name are peers", "remote", rc.dev.Remote,
			"limit", c.opts.MaxPeersPerRemote, "skipped", limited, "setting", "SEMAPHORE_WG_MAX_PEERS_PER_REMOTE")
	}
	for _, reason := range allReasons {
		c.metrics.skipped.WithLabelValues(rc.dev.Remote, reason).Set(float64(counts[reason]))
	}
}

var allReasons = []string{peers.ReasonNotAnnotated, peers.ReasonBadKey, peers.ReasonBadEndpoint, peers.ReasonNoPodCIDR,
	peers.ReasonBadPodCIDR, peers.ReasonDuplicateKey, peers.ReasonOverlappingIP,
	peers.ReasonInvalidName, peers.ReasonForeignEndpoint, peers.ReasonDuplicateEndpoint, peers.ReasonPeerLimit,
	peers.ReasonBadGatewayTerm, addrguard.ReasonSpecial, addrguard.ReasonOutsideRanges, addrguard.ReasonLocal, addrguard.ReasonTooWide}

// LocalSynced reports whether the local caches have synced, for /readyz: the one of this
// node's Node (the devices and the node's annotations are set up before Run).
func (c *Peering) LocalSynced() bool { return c.base.LocalSynced() }

// ResyncRemotes reconciles again everything of every remote that synced: the local ranges
// changed, and what the guard admits with them.
func (c *Peering) ResyncRemotes() { c.base.ResyncRemotes() }
