package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/perremote"
)

// Topology is how this cluster reaches a remote.
type Topology string

const (
	// TopologyMesh peers every node with the remote's nodes.
	TopologyMesh Topology = "mesh"
	// TopologyGateway reaches the remote through this cluster's active gateway: only it holds
	// peers for the remote, and the other nodes route the remote's pods to it.
	TopologyGateway Topology = "gateway"
)

// Topologies is SEMAPHORE_WG_TOPOLOGY: one topology for every remote, or remote:topology items
// with a bare one for the remotes not named ("aws:gateway,mesh"); mesh when unset.
type Topologies struct {
	perremote.Values[Topology]
}

// Decode parses the variable's value (envconfig.Decoder).
func (t *Topologies) Decode(value string) error {
	v, err := perremote.Parse(value, "topology", parseTopology)
	t.Values = v
	return err
}

// For returns the topology toward remote.
func (t Topologies) For(remote string) Topology { return t.Values.For(remote, TopologyMesh) }

func parseTopology(v string) (Topology, error) {
	if v != string(TopologyMesh) && v != string(TopologyGateway) {
		return "", fmt.Errorf("%q is not mesh or gateway", v)
	}
	return Topology(v), nil
}

// Election is this node's part in the election of its cluster's gateway toward one remote
// (gateway.Election).
type Election interface {
	State() (active bool, term uint64)
}

// role is what this node is toward one remote.
type role int

const (
	// roleMesh: the remote is reached node to node.
	roleMesh role = iota
	// roleGateway: this node is the cluster's active gateway toward the remote.
	roleGateway
	// roleStandby: this node is a gateway node, but another is the active one.
	roleStandby
	// roleMember: this node is no gateway node.
	roleMember
)

// holdsPeers reports whether a node of role r peers with the remote's nodes.
func (r role) holdsPeers() bool { return r == roleMesh || r == roleGateway }

// label is r's role label of the gateway metrics ("" for roleMesh).
func (r role) label() string {
	return [...]string{roleMesh: "", roleGateway: RoleActive, roleStandby: RoleStandby, roleMember: RoleMember}[r]
}

// noteGateway records, for a remote reached through gateways, this node's role and the active
// gateway it sees (gateway: "" when none), counting a change of gateway.
func (c *Peering) noteGateway(rc *remoteCache, r role, gateway string) {
	c.metrics.setGatewayRole(rc.dev.Remote, r.label())
	rc.mu.Lock()
	before := rc.gateway
	rc.gateway = gateway
	rc.mu.Unlock()
	if before != gateway && before != "" {
		c.metrics.gatewayChanges.WithLabelValues(rc.dev.Remote).Inc()
		c.log.Info("the cluster's gateway toward the remote changed", "remote", rc.dev.Remote, "gateway", gateway, "was", before)
	}
}

// roleOf is this node's role toward remote, and with roleGateway the term of its election.
func (c *Peering) roleOf(remote string) (role, uint64) {
	if c.opts.Topology.For(remote) != TopologyGateway {
		return roleMesh, 0
	}
	e := c.opts.Gateways[remote]
	if e == nil {
		return roleMember, 0
	}
	if active, term := e.State(); active {
		return roleGateway, term
	}
	return roleStandby, 0
}

// throughGateways are the remotes this cluster reaches through gateways.
func (c *Peering) throughGateways() []string {
	var out []string
	for name := range c.remotes {
		if c.opts.Topology.For(name) == TopologyGateway {
			out = append(out, name)
		}
	}
	return out
}

// watchGatewayNodes adds, when this cluster reaches a remote through gateways, an informer on
// its gateway nodes (opts.GatewayNodes): the active one says so in its annotations, and every
// other node routes the remote's pods to it.
func (c *Peering) watchGatewayNodes(local kubernetes.Interface) {
	remotes := c.throughGateways()
	if len(remotes) == 0 {
		return
	}
	selector := c.opts.GatewayNodes.String()
	factory := informers.NewSharedInformerFactoryWithOptions(local, c.opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Nodes()
	c.gatewayNodes = inf.Lister()
	enqueue := func(any) {
		for _, name := range remotes {
			c.base.Queue.Add(name)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
	c.base.WatchLocal(factory, inf.Informer().HasSynced)
}

// ElectionChanged syncs remote again: this node became its gateway or stopped being it.
func (c *Peering) ElectionChanged(remote string) { c.base.Queue.Add(remote) }

// activeGateway is the address, by family (4 or 6), of this cluster's active gateway toward
// remote: the InternalIP of the gateway node that says it is with the highest term. found is
// false when none says it.
func (c *Peering) activeGateway(remote string) (name string, via map[int]netip.Addr, found bool, err error) {
	list, err := c.gatewayNodes.List(labels.Everything())
	if err != nil {
		return "", nil, false, err
	}
	byName := make(map[string]*corev1.Node, len(list))
	nodes := make([]peers.Node, 0, len(list))
	for _, n := range list {
		byName[n.Name] = n
		nodes = append(nodes, peers.Node{Name: n.Name, Annotations: n.Annotations})
	}
	active, found, _ := peers.ActiveGateway(remote, nodes)
	if !found {
		return "", nil, false, nil
	}
	via = map[int]netip.Addr{}
	for _, a := range byName[active.Name].Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if a.Type != corev1.NodeInternalIP || err != nil {
			continue
		}
		ip = ip.Unmap()
		if _, ok := via[family(ip)]; !ok {
			via[family(ip)] = ip
		}
	}
	return active.Name, via, true, nil
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// syncThroughGateway makes this node, which is not the active gateway toward the remote of rc,
// hold no peer for it and publish nothing for it, and route the remote's pods to the active
// gateway over this cluster's network. A node that is no gateway node holds no device for the
// remote either. While no other gateway is known (one is being elected, or this node's own word
// from before it stood down is the latest), the routes stay as they are: through a device
// without peers, which drops what it is sent, rather than out of the default route in clear.
func (c *Peering) syncThroughGateway(ctx context.Context, rc *remoteCache, r role) error {
	desired, _, err := c.desiredPeers(rc)
	if err != nil {
		return err
	}
	name := rc.dev.Remote
	gateway, via, found, err := c.activeGateway(name)
	if err != nil {
		return err
	}
	if gateway == c.opts.NodeName {
		gateway, found = "", false
	}
	if err := c.holdNoPeers(rc, r, found); err != nil {
		return err
	}
	c.recordPeers(rc, nil, time.Now())
	c.noteGateway(rc, r, gateway)
	if found {
		if err := c.setGatewayRoutes(name, routesVia(desired, via)); err != nil {
			return fmt.Errorf("routes to the gateway %s: %w", gateway, err)
		}
	}
	node, err := c.node.Get(c.opts.NodeName)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_WG_NODE_NAME: node %s: %w", c.opts.NodeName, err)
	}
	return c.patchAnnotations(ctx, node, noAnnotationsFor(name), false)
}

// holdNoPeers removes the peers of the remote's device and, once another gateway is known
// (gatewayKnown), its routes, and with roleMember the device itself. A member that never held
// the device has none to remove.
func (c *Peering) holdNoPeers(rc *remoteCache, r role, gatewayKnown bool) error {
	dev := rc.dev.Device
	if r == roleMember && gatewayKnown {
		if err := c.devices.Delete(dev); err != nil {
			return fmt.Errorf("deleting %s, which a node that is no gateway does not hold: %w", dev, err)
		}
		return nil
	}
	actual, err := c.devices.Peers(dev)
	if errors.Is(err, device.ErrNotFound) && r == roleMember {
		return nil
	}
	if err != nil {
		return err
	}
	if changes := peers.Changes(nil, actual, c.opts.Keepalive, time.Now()); len(changes) > 0 {
		if err := c.devices.ConfigurePeers(dev, changes); err != nil {
			return fmt.Errorf("removing the peers of %s: %w", dev, err)
		}
		c.countChanges(rc, actual, changes)
	}
	if !gatewayKnown {
		return nil
	}
	_, removed, err := c.devices.SyncRoutes(dev, nil)
	c.metrics.changes.WithLabelValues(rc.dev.Remote, "route_remove").Add(float64(removed))
	return err
}

// setGatewayRoutes records the routes through a gateway remote wants, and makes the host's be
// those of every remote reached through gateways; those of a remote not synced yet since the
// start stay as they are until it is.
func (c *Peering) setGatewayRoutes(remote string, want map[netip.Prefix]netip.Addr) error {
	c.gwMu.Lock()
	defer c.gwMu.Unlock()
	if c.gwRoutes == nil {
		c.gwRoutes = map[string]map[netip.Prefix]netip.Addr{}
	}
	c.gwRoutes[remote] = want
	all := map[netip.Prefix]netip.Addr{}
	for _, routes := range c.gwRoutes {
		maps.Copy(all, routes)
	}
	prune := len(c.gwRoutes) == len(c.throughGateways())
	added, replaced, removed, err := c.devices.SyncGatewayRoutes(all, prune)
	c.metrics.changes.WithLabelValues(remote, "route_add").Add(float64(added + replaced))
	c.metrics.changes.WithLabelValues(remote, "route_remove").Add(float64(removed + replaced))
	return err
}

// routesVia are the pod addresses of desired, each to the gateway address of its family; those
// of a family the gateway has no address of are left out.
func routesVia(desired []peers.Peer, via map[int]netip.Addr) map[netip.Prefix]netip.Addr {
	out := map[netip.Prefix]netip.Addr{}
	for _, p := range desired {
		for _, n := range p.AllowedIPs {
			a, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			a = a.Unmap()
			ones, _ := n.Mask.Size()
			if gw, ok := via[family(a)]; ok {
				out[netip.PrefixFrom(a, ones).Masked()] = gw
			}
		}
	}
	return out
}

// noAnnotationsFor are this node's annotations for remote when it holds no peer for it: none.
func noAnnotationsFor(remote string) map[string]*string {
	return map[string]*string{
		peers.PubKeyAnnotation(remote): nil, peers.EndpointAnnotation(remote): nil,
		peers.PathMTUAnnotation(remote): nil, peers.GatewayAnnotation(remote): nil,
	}
}
