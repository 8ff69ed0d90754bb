package env

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// The nodes' network: the underlay (a bridge in a network namespace of its own) that joins
// them, each node's namespace on it, and the forwards that make the API servers and the
// registry reachable from there.

// namespacesFree checks that none of the nodes' network namespaces exists, and that their
// links' names are short enough. No lab may take over namespaces it did not create: those of
// another lab, or of one that died in another directory (a lab that died in this one was
// cleaned up after already).
func namespacesFree(nodes []Node) error {
	all := []string{UnderlayNetns}
	for _, n := range nodes {
		all = append(all, n.Netns)
		if len(n.veth()) > peers.MaxDeviceName {
			return fmt.Errorf("link name %s is longer than %d bytes", n.veth(), peers.MaxDeviceName)
		}
	}
	for _, ns := range all {
		if netnstopo.Exists(ns) {
			return fmt.Errorf("network namespace %s exists already: another lab with nodes runs on this machine, or one that died left it behind (ip netns del %s)", ns, ns)
		}
	}
	return nil
}

// createNetwork creates the underlay (its namespace exists), the egress proxy on it, every
// node's namespace on it, and the forwards into them, adding what stops them to stops.
func (l *Lab) createNetwork(nodes []Node, stops *[]func()) error {
	if err := l.createUnderlay(nodes); err != nil {
		return err
	}
	egress, err := l.startEgress()
	if egress != nil {
		*stops = append(*stops, egress)
	}
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := l.createNodeNetns(n, nodes); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	// The underlay works: the first node reaches every other one.
	for _, n := range nodes[1:] {
		if _, err := testbed.Ping(nodes[0].Netns, nodes[0].Underlay, n.Underlay, 2*time.Second); err != nil {
			return fmt.Errorf("underlay: %s cannot reach %s: %w", nodes[0].Name, n.Name, err)
		}
	}
	forwards, err := l.forwardIntoNodes(nodes)
	*stops = append(*stops, forwards...)
	return err
}

// createUnderlay makes the bridge that joins the nodes, with every cluster's API server
// address on it, and routes every node's pod CIDR to the node: the way back for pods that
// talk to an API server.
func (l *Lab) createUnderlay(nodes []Node) error {
	var apiAddrs []string
	for _, c := range ClusterSpecs {
		apiAddrs = append(apiAddrs, onUnderlay(c.APIAddr))
	}
	if err := underlay.AddBridge(apiAddrs...); err != nil {
		return err
	}
	var routes [][]string
	for _, n := range nodes {
		routes = append(routes, []string{n.PodCIDR, "via", n.Underlay})
	}
	return netnstopo.AddRoutes(UnderlayNetns, routes...)
}

// underlay is the bridge that joins the nodes.
var underlay = netnstopo.Underlay{Netns: UnderlayNetns, Bridge: bridgeLink}

// onUnderlay is addr with the underlay's prefix length, as an address of a link on it.
func onUnderlay(addr string) string {
	return addr + "/" + strconv.Itoa(netip.MustParsePrefix(UnderlayCIDR).Bits())
}

// createNodeNetns makes node n's network namespace on the underlay, with routes to the pod
// CIDRs of the other nodes of its cluster.
func (l *Lab) createNodeNetns(n Node, nodes []Node) error {
	if err := l.addNetns(n.Netns); err != nil {
		return err
	}
	if err := underlay.Join(netnstopo.Node{Netns: n.Netns, Link: nodeLink, Port: n.veth(), Addr: onUnderlay(n.Underlay)}); err != nil {
		return err
	}
	var routes [][]string
	for _, o := range nodes {
		if o.Cluster == n.Cluster && o.Name != n.Name {
			routes = append(routes, []string{o.PodCIDR, "via", o.Underlay})
		}
	}
	// A process on the node's own network (a host-network pod) needs a route to the Service
	// CIDR before kube-proxy's rules translate its ClusterIP: a node has a default route for
	// that, the lab's nodes have none (nothing may leave the machine). Addresses kube-proxy
	// does not translate die on the underlay.
	routes = append(routes, []string{SpecOf(n.Cluster).ServiceCIDR, "dev", nodeLink})
	return netnstopo.AddRoutes(n.Netns, routes...)
}

// forwardIntoNodes makes every API server reachable on the underlay at its cluster's APIAddr
// (same port as on this machine's loopback, the port the API server advertises), and the
// registry inside every node at the address it has on this machine, where containerd pulls
// from. It returns what stops the forwarders.
func (l *Lab) forwardIntoNodes(nodes []Node) ([]func(), error) {
	var stops []func()
	for _, spec := range ClusterSpecs {
		u, err := url.Parse(l.clusters[spec.Name].Config.Host)
		if err != nil {
			return stops, err
		}
		_, stop, err := testbed.ForwardInto(UnderlayNetns, net.JoinHostPort(spec.APIAddr, u.Port()), u.Host)
		if err != nil {
			return stops, fmt.Errorf("%s: the API server on the underlay: %w", spec.Name, err)
		}
		stops = append(stops, stop)
	}
	for _, n := range nodes {
		_, stop, err := testbed.ForwardInto(n.Netns, l.registry, l.registry)
		if err != nil {
			return stops, fmt.Errorf("%s: the registry: %w", n.Name, err)
		}
		stops = append(stops, stop)
	}
	return stops, nil
}

// apiServerOnUnderlay is cluster's API server URL as nodes and pods (its own and other
// clusters') reach it: what semaphore-remote's NOTES give the consumers.
func (l *Lab) apiServerOnUnderlay(cluster string) string {
	spec := SpecOf(cluster)
	u, _ := url.Parse(l.clusters[cluster].Config.Host)
	return "https://" + net.JoinHostPort(spec.APIAddr, u.Port())
}

// addNetns creates a network namespace with its loopback up. It records the name in the state
// first, so that whatever cleans up after a lab that died (cleanUp) deletes it.
func (l *Lab) addNetns(name string) error {
	l.update(func(rec *Record) { rec.Namespaces = append(slices.Clip(rec.Namespaces), name) })
	return netnstopo.AddNetns(name)
}

// deleteNamespaces deletes the network namespaces the lab created, and with them every link
// and address in them.
func (l *Lab) deleteNamespaces() {
	names := l.Record().Namespaces
	var existing []string
	for _, ns := range names {
		if netnstopo.Exists(ns) {
			existing = append(existing, ns)
		}
	}
	if err := deleteNetns(existing, io.Discard); err != nil {
		l.Logf("%v", err)
	}
	l.update(func(rec *Record) { rec.Namespaces = nil })
	if len(existing) > 0 {
		l.Logf("deleted the nodes' network namespaces")
	}
}

// deleteNetns deletes those of the network namespaces names that exist, in reverse order,
// saying so on out.
func deleteNetns(names []string, out io.Writer) error {
	var errs []error
	for _, ns := range slices.Backward(names) {
		if !netnstopo.Exists(ns) {
			continue
		}
		fmt.Fprintf(out, "lab: deleting network namespace %s\n", ns)
		errs = append(errs, netnstopo.DeleteNetns(ns))
	}
	return errors.Join(errs...)
}
