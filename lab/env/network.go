package env

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The nodes' network: the lab's internet, each provider's router with its private network
// (providers.go), every node's namespace on its provider's network, and the forwards that make
// the API servers and the registry reachable from there.

// namespacesFree checks that none of the lab's network namespaces exists, and that their
// links' names are short enough. No lab may take over namespaces it did not create: those of
// another lab, or of one that died in another directory (a lab that died in this one was
// cleaned up after already).
func namespacesFree(nodes []layout.Node) error {
	all := []string{layout.InternetNetns}
	for _, spec := range layout.ClusterSpecs {
		all = append(all, layout.VPCNetns(spec.Name))
		if len(internetLink(spec.Name)) > peers.MaxDeviceName {
			return fmt.Errorf("link name %s is longer than %d bytes", internetLink(spec.Name), peers.MaxDeviceName)
		}
	}
	for _, n := range nodes {
		all = append(all, n.Netns)
		if len(nodeVeth(n)) > peers.MaxDeviceName {
			return fmt.Errorf("link name %s is longer than %d bytes", nodeVeth(n), peers.MaxDeviceName)
		}
	}
	for _, ns := range all {
		if netnstopo.Exists(ns) {
			return fmt.Errorf("network namespace %s exists already: another lab with nodes runs on this machine, or one that died left it behind (ip netns del %s)", ns, ns)
		}
	}
	return nil
}

// internetLink is the internet's end of cluster's uplink.
func internetLink(cluster string) string { return linkPrefix + cluster }

// createNetwork creates the internet (its namespace exists), each provider's router with its
// egress proxy, every node's namespace on its provider's network, and the forwards into them,
// adding what stops them to stops.
func (l *Lab) createNetwork(nodes []layout.Node, stops *[]func()) error {
	for _, spec := range layout.ClusterSpecs {
		if err := l.createProviderNetwork(spec, nodes); err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		egress, err := l.startEgress(spec.Name)
		if egress != nil {
			*stops = append(*stops, egress)
		}
		if err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := l.createNodeNetns(n, nodes); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	// Each provider's network works: its router reaches every node.
	for _, n := range nodes {
		spec := layout.SpecOf(n.Cluster)
		if _, err := testbed.Ping(layout.VPCNetns(n.Cluster), spec.Network.Gateway(), n.InternalIP, 2*time.Second); err != nil {
			return fmt.Errorf("%s: %s cannot reach %s: %w", spec.Network.Provider, layout.VPCNetns(n.Cluster), n.Name, err)
		}
	}
	forwards, err := l.forwardIntoNodes(nodes)
	*stops = append(*stops, forwards...)
	if err != nil {
		return err
	}
	return l.applyInternetRules()
}

// createProviderNetwork makes spec's router: a namespace with the private network's bridge
// (the gateway and the API server's private address on it, the provider's MTU), its uplink to
// the internet, routes to every node's pods, forwarding, the NAT and the firewall.
func (l *Lab) createProviderNetwork(spec layout.ClusterSpec, nodes []layout.Node) error {
	vpc, net := layout.VPCNetns(spec.Name), spec.Network
	if err := l.addNetns(vpc); err != nil {
		return err
	}
	bridge := netnstopo.Underlay{Netns: vpc, Bridge: bridgeLink}
	if err := bridge.AddBridge(withBits(net.Gateway(), net.CIDR), withBits(spec.APIAddr, net.CIDR)); err != nil {
		return err
	}
	mtu := strconv.Itoa(net.MTU)
	err := netnstopo.IP(
		[]string{"-n", vpc, "link", "set", bridgeLink, "mtu", mtu},
		[]string{"-n", vpc, "link", "add", uplinkLink, "type", "veth", "peer", "name", internetLink(spec.Name), "netns", layout.InternetNetns},
		[]string{"-n", vpc, "addr", "add", withBits(net.RouterEnd(), net.Uplink), "dev", uplinkLink},
		[]string{"-n", vpc, "link", "set", uplinkLink, "up"},
		[]string{"-n", layout.InternetNetns, "addr", "add", withBits(net.InternetEnd(), net.Uplink), "dev", internetLink(spec.Name)},
		[]string{"-n", layout.InternetNetns, "link", "set", internetLink(spec.Name), "up"},
	)
	if err != nil {
		return err
	}
	routes := [][]string{{"default", "via", net.InternetEnd()}}
	for _, n := range nodes {
		if n.Cluster == spec.Name && n.PodCIDR != "" {
			routes = append(routes, []string{n.PodCIDR, "via", n.InternalIP})
		}
	}
	if spec.Name == layout.CalicoCluster {
		// calico-ipam's blocks move: the router sends the cluster's pods to its first node,
		// which has a route to every block (VXLAN to the others), as an overlay network's
		// gateway would.
		routes = append(routes, []string{spec.PodCIDR, "via", firstNodeOf(spec.Name, nodes).InternalIP})
	}
	if err := netnstopo.AddRoutes(vpc, routes...); err != nil {
		return err
	}
	var internetRoutes [][]string
	for _, a := range layout.PublicAddrs(spec, nodes) {
		internetRoutes = append(internetRoutes, []string{a + "/32", "via", net.RouterEnd()})
	}
	if err := netnstopo.AddRoutes(layout.InternetNetns, internetRoutes...); err != nil {
		return err
	}
	if err := enableForwarding(vpc); err != nil {
		return err
	}
	return iptablesRestoreIn(vpc, routerRules(spec, nodes))
}

// applyInternetRules makes the lab's internet a router with its firewall, its API servers'
// published addresses its own.
func (l *Lab) applyInternetRules() error {
	ports := map[string]string{}
	for _, spec := range layout.ClusterSpecs {
		ports[spec.Name] = l.apiServerPort(spec.Name)
	}
	if err := enableForwarding(layout.InternetNetns); err != nil {
		return err
	}
	return iptablesRestoreIn(layout.InternetNetns, internetRules(ports))
}

// enableForwarding makes the namespace netns route between its links.
func enableForwarding(netns string) error {
	out, err := exec.Command("ip", "netns", "exec", netns, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: forwarding: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// iptablesRestoreIn replaces the tables of rules in netns with rules.
func iptablesRestoreIn(netns, rules string) error {
	cmd := exec.Command("ip", "netns", "exec", netns, "iptables-restore", "-w")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: iptables-restore: %w: %s\n%s", netns, err, strings.TrimSpace(string(out)), rules)
	}
	return nil
}

// createNodeNetns makes node n's network namespace on its provider's network, with its
// provider's MTU, its router as default route, routes to the pod CIDRs of the other nodes of
// its cluster, and the masquerade of its pods' traffic to anything outside the cluster's pods
// (ip-masq-agent's, a cloud CNI's): only the node's address may leave for its router, which
// translates it. What goes to another cluster's pods leaves through WireGuard, untranslated.
func (l *Lab) createNodeNetns(n layout.Node, nodes []layout.Node) error {
	spec := layout.SpecOf(n.Cluster)
	if err := l.addNetns(n.Netns); err != nil {
		return err
	}
	bridge := netnstopo.Underlay{Netns: layout.VPCNetns(n.Cluster), Bridge: bridgeLink}
	if err := bridge.Join(netnstopo.Node{Netns: n.Netns, Link: nodeLink, Port: nodeVeth(n), Addr: withBits(n.InternalIP, spec.Network.CIDR)}); err != nil {
		return err
	}
	mtu := strconv.Itoa(spec.Network.MTU)
	if err := netnstopo.IP(
		[]string{"-n", n.Netns, "link", "set", nodeLink, "mtu", mtu},
		[]string{"-n", layout.VPCNetns(n.Cluster), "link", "set", nodeVeth(n), "mtu", mtu},
	); err != nil {
		return err
	}
	routes := [][]string{{"default", "via", spec.Network.Gateway()}}
	for _, o := range nodes {
		if o.Cluster == n.Cluster && o.Name != n.Name && o.PodCIDR != "" {
			routes = append(routes, []string{o.PodCIDR, "via", o.InternalIP})
		}
	}
	if err := netnstopo.AddRoutes(n.Netns, routes...); err != nil {
		return err
	}
	unmasked := spec.PodCIDR
	if spec.Gateways {
		// The remotes' pods are reached through the active gateway, over this network: their
		// ranges are left unmasqueraded too (ip-masq-agent's nonMasqueradeCIDRs, docs/gateways.md),
		// so the remote sees the pod's own address. The lab's pod ranges all lie in PodsCIDR.
		unmasked = layout.PodsCIDR
	}
	nat := []string{fmt.Sprintf("-A POSTROUTING -o %s -s %s ! -d %s -j MASQUERADE", nodeLink, spec.PodCIDR, unmasked)}
	if n.Cluster == layout.CalicoCluster {
		// What the router sends the first node for a pod of another node leaves it over
		// VXLAN from the node's own address, so that the reply comes back the same way (Felix
		// drops the packets of a connection it saw only half of).
		nat = append(nat, fmt.Sprintf("-A POSTROUTING -o vxlan.calico -s %s -j MASQUERADE", spec.Network.CIDR))
	}
	return iptablesRestoreIn(n.Netns, iptablesRestore(map[string][]string{"nat": nat}))
}

// firstNodeOf is cluster's first node of nodes.
func firstNodeOf(cluster string, nodes []layout.Node) layout.Node {
	for _, n := range nodes {
		if n.Cluster == cluster {
			return n
		}
	}
	return layout.Node{}
}

// forwardIntoNodes makes every API server reachable at its private address in its provider's
// network and at its published address on the internet (same port as on this machine's
// loopback, the port the API server advertises), and the registry inside every node (where
// containerd pulls from) and on the internet (where the guide's helm pulls the charts from) at
// the address it has on this machine. It returns what stops the
// forwarders.
func (l *Lab) forwardIntoNodes(nodes []layout.Node) ([]func(), error) {
	var stops []func()
	var public []string
	for _, spec := range layout.ClusterSpecs {
		public = append(public, spec.PublicAPIAddr)
	}
	if err := netnstopo.AddLocalAddrs(layout.InternetNetns, linkPrefix+"api", public...); err != nil {
		return stops, err
	}
	for _, spec := range layout.ClusterSpecs {
		u, err := url.Parse(l.clusters[spec.Name].Config.Host)
		if err != nil {
			return stops, err
		}
		for netns, addr := range map[string]string{layout.VPCNetns(spec.Name): spec.APIAddr, layout.InternetNetns: spec.PublicAPIAddr} {
			_, stop, err := testbed.ForwardInto(netns, net.JoinHostPort(addr, u.Port()), u.Host)
			if err != nil {
				return stops, fmt.Errorf("%s: the API server at %s: %w", spec.Name, addr, err)
			}
			stops = append(stops, stop)
		}
	}
	// The workstation on the internet installs the charts from the registry too.
	for _, netns := range append([]string{layout.InternetNetns}, nodeNetns(nodes)...) {
		_, stop, err := testbed.ForwardInto(netns, l.registry, l.registry)
		if err != nil {
			return stops, fmt.Errorf("%s: the registry: %w", netns, err)
		}
		stops = append(stops, stop)
	}
	return stops, nil
}

// nodeNetns are the network namespaces of nodes.
func nodeNetns(nodes []layout.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Netns
	}
	return out
}

// apiServerPort is the port of cluster's API server, the same at every address.
func (l *Lab) apiServerPort(cluster string) string {
	u, _ := url.Parse(l.clusters[cluster].Config.Host)
	return u.Port()
}

// privateAPIServer is cluster's API server URL as its own nodes and pods reach it.
func (l *Lab) privateAPIServer(cluster string) string {
	return "https://" + net.JoinHostPort(layout.SpecOf(cluster).APIAddr, l.apiServerPort(cluster))
}

// PublicAPIServer is cluster's API server URL as the other clusters and a workstation on the
// internet reach it: what semaphore-remote's NOTES give the consumers.
func (l *Lab) PublicAPIServer(cluster string) string {
	return "https://" + net.JoinHostPort(layout.SpecOf(cluster).PublicAPIAddr, l.apiServerPort(cluster))
}

// addNetns creates a network namespace with its loopback up. It records the name in the state
// first, so that whatever cleans up after a lab that died (cleanUp) deletes it.
func (l *Lab) addNetns(name string) error {
	l.update(func(rec *layout.Record) { rec.Namespaces = append(slices.Clip(rec.Namespaces), name) })
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
	l.update(func(rec *layout.Record) { rec.Namespaces = nil })
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

// CutNode takes node n off its provider's network, as a pulled cable or a failed instance
// does: the router's end of its link goes down, so the node's own link loses its carrier and
// keeps its addresses and routes. reconnect brings it back.
func (l *Lab) CutNode(n layout.Node) (reconnect func() error, err error) {
	link := func(state string) error {
		return netnstopo.IP([]string{"-n", layout.VPCNetns(n.Cluster), "link", "set", nodeVeth(n), state})
	}
	return func() error { return link("up") }, link("down")
}
