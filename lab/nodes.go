package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/helmchart"
	"github.com/kube-semaphore/semaphore/internal/netnstopo"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// The lab's nodes. Every node of every cluster is a network namespace running containerd,
// kubelet and kube-proxy (lab/node), joined to the others by an underlay (a bridge in a
// namespace of its own). Its pods get addresses from its pod CIDR on a CNI bridge; the nodes of
// a cluster route each other's pod CIDRs over the underlay, and nothing routes one cluster's
// pods to another's: that traffic only goes through the WireGuard devices semaphore-wireguard
// sets up on each node. The underlay also holds each cluster's API server address (APIAddr),
// forwarded to the API server on this machine's loopback: the kubernetes Service's endpoint,
// for the kubelets, kube-proxy, pods, and other clusters' pods. Nothing is created in the host's
// network namespace: every link is created directly in the namespace it belongs to, so deleting
// the namespaces deletes everything.
//
// The nodes need root (and Linux); without, the lab runs without nodes, and so without pods, and
// says so.

const (
	// nodesPerCluster: two, so that every remote is more than one peer.
	nodesPerCluster = 2
	// netnsPrefix starts the name of every network namespace of the lab, in `ip netns list`.
	// The names are the same for every lab directory: one lab with nodes per machine.
	netnsPrefix   = "semaphore-lab-"
	underlayNetns = netnsPrefix + "underlay"
	// underlayCIDR is the network the nodes reach each other on (their InternalIPs): like the
	// pod CIDRs, a part of 198.18.0.0/15, the benchmark range, apart from them.
	underlayCIDR = "198.19.0.0/24"
	// linkPrefix starts the name of every link of the lab (at most 15 bytes), so that one
	// ending up where it should not would be easy to tell.
	linkPrefix = "semlab-"
	bridgeLink = linkPrefix + "br"
	// nodeLink is a node's end of its veth to the underlay bridge.
	nodeLink = linkPrefix + "ul"
	// silentUpstreamDNS is the upstream resolver of the clusters' CoreDNS: an address on the
	// underlay that no link has, so that a query for a name outside the clusters goes nowhere
	// (and never leaves the machine).
	silentUpstreamDNS = "198.19.0.254"
	// sysctlsFile (in the lab directory) keeps the machine's sysctls that kubelet changes, as
	// they were before the first node started, until they are restored.
	sysctlsFile = "nodes/sysctls.json"
	// clusterDomain is every cluster's DNS domain.
	clusterDomain = "cluster.local"
)

// NodesState is the lab's nodes, or why it runs without them.
type NodesState struct {
	// Skipped says why there are no nodes (and so no pods).
	Skipped  string      `json:"skipped,omitempty"`
	Underlay string      `json:"underlay,omitempty"`
	Nodes    []NodeState `json:"nodes,omitempty"`
}

// NodeState is one node: a Node in its cluster, and a network namespace on this machine.
type NodeState struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Netns   string `json:"netns"`
	// Underlay is the node's address on the underlay, its InternalIP.
	Underlay string `json:"underlay"`
	// PodCIDR is the range the node's CNI hands out addresses from (the Calico-way cluster's
	// nodes: within it, see calicoBorrowed), and its Node's pod CIDR (but for those).
	PodCIDR string `json:"podCIDR"`
	// Dir holds the node's state: containerd's, kubelet's, the pods' logs (lab/node).
	Dir string `json:"dir"`
	// Zone is the node's topology.kubernetes.io/zone: each node of a cluster in a zone of its
	// own, which kube-proxy and the global services' local-first hints go by.
	Zone string `json:"zone"`
}

// nodeName is the name of the i-th node (from 0) of cluster.
func nodeName(cluster string, i int) string {
	return fmt.Sprintf("%s-node-%d", cluster, i+1)
}

// nodeZone is the zone of the i-th node (from 0) of cluster: <cluster>-a, <cluster>-b, ...
func nodeZone(cluster string, i int) string {
	return fmt.Sprintf("%s-%c", cluster, 'a'+i)
}

// nodePodCIDR is the pod CIDR of the i-th node of cluster: an equal part of the cluster's.
func nodePodCIDR(cluster string, i int) netip.Prefix {
	for _, c := range clusterSpecs {
		if c.Name == cluster {
			p := netip.MustParsePrefix(c.PodCIDR)
			split := bits.Len(uint(nodesPerCluster - 1))
			size := 1 << (32 - p.Bits() - split)
			return netip.PrefixFrom(addrAdd(p.Addr(), i*size), p.Bits()+split)
		}
	}
	panic("no cluster " + cluster)
}

// addrAdd is the IPv4 address n after a.
func addrAdd(a netip.Addr, n int) netip.Addr {
	b := a.As4()
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(n))
	return netip.AddrFrom4(b)
}

// labNodes are the lab's nodes: nodesPerCluster in every cluster.
func (l *lab) labNodes() []NodeState {
	underlay := netip.MustParsePrefix(underlayCIDR).Addr()
	var out []NodeState
	for ci, c := range clusterSpecs {
		for i := range nodesPerCluster {
			name := nodeName(c.Name, i)
			out = append(out, NodeState{
				Name:    name,
				Cluster: c.Name,
				Netns:   fmt.Sprintf("%s%s-%d", netnsPrefix, c.Name, i+1),
				// aws-node-1 is .11, gcp-node-2 .22: the address tells the node.
				Underlay: addrAdd(underlay, 10*(ci+1)+i+1).String(),
				PodCIDR:  nodePodCIDR(c.Name, i).String(),
				Dir:      l.path("nodes", name),
				Zone:     nodeZone(c.Name, i),
			})
		}
	}
	return out
}

// veth is the underlay's end of node n's veth: linkPrefix and the namespace's name after
// netnsPrefix (semlab-aws-1).
func (n NodeState) veth() string {
	return linkPrefix + strings.TrimPrefix(n.Netns, netnsPrefix)
}

// startNodes creates the nodes where the machine allows: the underlay with the API servers'
// addresses, a network namespace per node with routes to its cluster's other nodes' pods, and
// in each a real node (containerd, kubelet, kube-proxy) registered as the Node the lab made
// with its pod CIDR (none in the Calico-way cluster).
func (l *lab) startNodes(ctx context.Context) error {
	nodes := l.labNodes()
	reason := nodesUnsupported()
	if !l.withNodes {
		reason = "-nodes=false: the control-plane part only, as without root"
	}
	if reason != "" {
		l.skipNodes(reason)
		return nil
	}
	// No lab may take over namespaces it did not create: those of another lab, or of one that
	// died in another directory (a lab that died in this one was cleaned up after already).
	all := []string{underlayNetns}
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
	var stops []func()
	l.onTeardown(func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
		l.deleteNamespaces()
	})
	if err := l.addNetns(underlayNetns); err != nil {
		// The first namespace tells whether this machine lets us create any: a container
		// without CAP_SYS_ADMIN does not, even as root.
		l.skipNodes(fmt.Sprintf("cannot create network namespaces: %v", err))
		return nil
	}
	if err := l.createUnderlay(nodes); err != nil {
		return err
	}
	egress, err := l.startEgress()
	if egress != nil {
		stops = append(stops, egress)
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
		if _, err := pingInNetns(nodes[0].Netns, nodes[0].Underlay, n.Underlay, 2*time.Second); err != nil {
			return fmt.Errorf("underlay: %s cannot reach %s: %w", nodes[0].Name, n.Name, err)
		}
	}
	forwards, err := l.forwardIntoNodes(nodes)
	stops = append(stops, forwards...)
	if err != nil {
		return err
	}
	if err := l.createNodeObjects(ctx, nodes); err != nil {
		return err
	}
	stop, err := l.runNodes(ctx, nodes)
	stops = append(stops, stop)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.state.Nodes = &NodesState{Underlay: underlayCIDR, Nodes: nodes}
	l.mu.Unlock()
	l.saveState()
	return l.waitNodesReady(ctx, nodes)
}

// createUnderlay makes the bridge that joins the nodes, with every cluster's API server
// address on it, and routes every node's pod CIDR to the node: the way back for pods that
// talk to an API server.
func (l *lab) createUnderlay(nodes []NodeState) error {
	var apiAddrs []string
	for _, c := range clusterSpecs {
		apiAddrs = append(apiAddrs, onUnderlay(c.APIAddr))
	}
	if err := underlay.AddBridge(apiAddrs...); err != nil {
		return err
	}
	var routes [][]string
	for _, n := range nodes {
		routes = append(routes, []string{n.PodCIDR, "via", n.Underlay})
	}
	return netnstopo.AddRoutes(underlayNetns, routes...)
}

// underlay is the bridge that joins the nodes.
var underlay = netnstopo.Underlay{Netns: underlayNetns, Bridge: bridgeLink}

// onUnderlay is addr with the underlay's prefix length, as an address of a link on it.
func onUnderlay(addr string) string {
	return addr + "/" + strconv.Itoa(netip.MustParsePrefix(underlayCIDR).Bits())
}

// createNodeNetns makes node n's network namespace on the underlay, with routes to the pod
// CIDRs of the other nodes of its cluster.
func (l *lab) createNodeNetns(n NodeState, nodes []NodeState) error {
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
	routes = append(routes, []string{specOf(n.Cluster).ServiceCIDR, "dev", nodeLink})
	return netnstopo.AddRoutes(n.Netns, routes...)
}

// forwardIntoNodes makes every API server reachable on the underlay at its cluster's APIAddr
// (same port as on this machine's loopback, the port the API server advertises), and the
// registry inside every node at the address it has on this machine, where containerd pulls
// from. It returns what stops the forwarders.
func (l *lab) forwardIntoNodes(nodes []NodeState) ([]func(), error) {
	var stops []func()
	for _, spec := range clusterSpecs {
		u, err := url.Parse(l.clusters[spec.Name].Config.Host)
		if err != nil {
			return stops, err
		}
		_, stop, err := testbed.ForwardInto(underlayNetns, net.JoinHostPort(spec.APIAddr, u.Port()), u.Host)
		if err != nil {
			return stops, fmt.Errorf("%s: the API server on the underlay: %w", spec.Name, err)
		}
		stops = append(stops, stop)
	}
	for _, n := range nodes {
		stop, err := forwardIntoNetns(n.Netns, l.registry)
		if err != nil {
			return stops, fmt.Errorf("%s: the registry: %w", n.Name, err)
		}
		stops = append(stops, stop)
	}
	return stops, nil
}

// apiServerOnUnderlay is cluster's API server URL as nodes and pods (its own and other
// clusters') reach it: what semaphore-remote's NOTES give the consumers.
func (l *lab) apiServerOnUnderlay(cluster string) string {
	spec := specOf(cluster)
	u, _ := url.Parse(l.clusters[cluster].Config.Host)
	return "https://" + net.JoinHostPort(spec.APIAddr, u.Port())
}

// runNodes starts containerd, kubelet and kube-proxy on every node, each kubelet with its
// node's credentials (system:node:<name>, which the Node authorizer limits to its own node and
// pods) and kube-proxy with system:kube-proxy's. stop stops them all and restores the
// machine-wide settings kubelet changes.
func (l *lab) runNodes(ctx context.Context, nodes []NodeState) (stop func(), err error) {
	var running []*node.Node
	sysctls := l.path(sysctlsFile)
	stop = func() {
		l.keepPodLogs()
		var wg sync.WaitGroup
		for _, n := range running {
			wg.Go(func() {
				if err := n.Stop(); err != nil {
					l.logf("stopping a node: %v", err)
				}
			})
		}
		wg.Wait()
		if err := node.RestoreSysctls(sysctls); err != nil {
			l.logf("restoring the machine's sysctls: %v", err)
		}
		l.logf("stopped the nodes")
	}
	if err := os.MkdirAll(l.path("nodes"), 0o755); err != nil {
		return stop, err
	}
	if err := node.SaveSysctls(sysctls); err != nil {
		return stop, err
	}
	keyDir, err := wireguardKeyDir()
	if err != nil {
		return stop, err
	}
	for _, n := range nodes {
		started, err := l.startNode(ctx, n, keyDir)
		if err != nil {
			return stop, fmt.Errorf("%s: %w", n.Name, err)
		}
		running = append(running, started)
		for _, pid := range started.PIDs() {
			l.recordProcess("node-"+n.Name, pid)
		}
	}
	l.logf("started containerd, kubelet and kube-proxy on %d nodes (network namespaces %s*, underlay %s)", len(nodes), netnsPrefix, underlayCIDR)
	return stop, nil
}

// startNode starts node n with its credentials, and keyDir private to it.
func (l *lab) startNode(ctx context.Context, n NodeState, keyDir string) (*node.Node, error) {
	spec := specOf(n.Cluster)
	c, server := l.clusters[n.Cluster], l.apiServerOnUnderlay(n.Cluster)
	kubeletKubeconfig := filepath.Join(n.Dir+"-credentials", "kubelet.kubeconfig")
	proxyKubeconfig := filepath.Join(n.Dir+"-credentials", "kube-proxy.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(kubeletKubeconfig), 0o700); err != nil {
		return nil, err
	}
	if err := c.AddUser(kubeletKubeconfig, "system:node:"+n.Name, []string{"system:nodes"}, server); err != nil {
		return nil, err
	}
	if err := c.AddUser(proxyKubeconfig, "system:kube-proxy", nil, server); err != nil {
		return nil, err
	}
	start, end, _ := calicoBorrowed(n.Name)
	return node.Start(ctx, node.Config{
		Name:            n.Name,
		Netns:           n.Netns,
		IP:              n.Underlay,
		PodCIDR:         n.PodCIDR,
		PodRangeStart:   start,
		PodRangeEnd:     end,
		ClusterCIDR:     spec.PodCIDR,
		ClusterDNS:      spec.dnsServiceIP(),
		ClusterDomain:   clusterDomain,
		Kubeconfig:      kubeletKubeconfig,
		ProxyKubeconfig: proxyKubeconfig,
		// The CA of the API server's client certificate for kubelets (clusterPKI).
		ClientCAFile: l.path("clusters", n.Cluster, "pki", caFile),
		Registry:     l.registry,
		SandboxImage: l.imageRef(pauseImage),
		Dir:          n.Dir,
		LogDir:       l.path("logs"),
		BinDir:       l.bin.kube,
		// semaphore-wireguard's keys (the chart's hostPath) are each node's own.
		PrivateDirs: []string{keyDir},
	})
}

// wireguardKeyDir is where semaphore-wireguard keeps its keys on a node (the chart's keyDir,
// a hostPath): each node's own.
func wireguardKeyDir() (string, error) {
	path := filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir, "charts", "wireguard", "values.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var values struct {
		KeyDir string `json:"keyDir"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if values.KeyDir == "" {
		return "", fmt.Errorf("%s: no keyDir", path)
	}
	return values.KeyDir, nil
}

// keepPodLogs copies the logs of the lab's pods into logs/pods/<cluster>_<namespace>_<pod>.log
// before the nodes, and their /var/log/pods, go.
func (l *lab) keepPodLogs() {
	dir := l.path("logs", "pods")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	for _, p := range l.snapshot().Pods {
		data, err := os.ReadFile(p.Log)
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, p.Cluster+"_"+p.Namespace+"_"+p.Name+".log"), data, 0o644)
	}
}

// waitNodesReady waits until every node is Ready.
func (l *lab) waitNodesReady(ctx context.Context, nodes []NodeState) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			// An error (the API server busy) is asked again, like a node not Ready yet.
			obj, err := l.clusters[n.Cluster].Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if ready := err == nil && nodeReady(obj); !ready {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the nodes are not Ready (see logs/kubelet-*.log): %w", err)
	}
	l.logf("the %d nodes are Ready", len(nodes))
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// skipNodes records that the lab runs without nodes, and why.
func (l *lab) skipNodes(reason string) {
	l.logf("skipping the nodes (and so every pod: controllers, CoreDNS, sample workloads): %s", reason)
	l.mu.Lock()
	l.state.Nodes = &NodesState{Skipped: reason}
	l.mu.Unlock()
	l.saveState()
}

// createNodeObjects creates every node's Node with its pod CIDR, which no controller allocates
// here (kube-controller-manager runs with --allocate-node-cidrs=false), and its zone, which a
// cloud provider would set; the kubelet registers into it (keeping both) and sets its status. The Calico-way cluster's Nodes have none: its IPAM blocks say
// where the pods are (calico.go).
func (l *lab) createNodeObjects(ctx context.Context, nodes []NodeState) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range nodes {
		spec := corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}}
		if n.Cluster == calicoCluster {
			spec = corev1.NodeSpec{}
		}
		_, err := l.clusters[n.Cluster].Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: n.Zone}},
			Spec:       spec,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%s: node %s: %w", n.Cluster, n.Name, err)
		}
	}
	return nil
}

// addNetns creates a network namespace with its loopback up. It records the name in the state
// first, so that whatever cleans up after a lab that died (cleanUp) deletes it.
func (l *lab) addNetns(name string) error {
	l.mu.Lock()
	l.state.Namespaces = append(slices.Clip(l.state.Namespaces), name)
	l.mu.Unlock()
	l.saveState()
	return netnstopo.AddNetns(name)
}

// deleteNamespaces deletes the network namespaces the lab created, and with them every link
// and address in them.
func (l *lab) deleteNamespaces() {
	l.mu.Lock()
	names := l.state.Namespaces
	l.mu.Unlock()
	var existing []string
	for _, ns := range names {
		if netnstopo.Exists(ns) {
			existing = append(existing, ns)
		}
	}
	if err := deleteNetns(existing, io.Discard); err != nil {
		l.logf("%v", err)
	}
	l.mu.Lock()
	l.state.Namespaces = nil
	l.mu.Unlock()
	l.saveState()
	if len(existing) > 0 {
		l.logf("deleted the nodes' network namespaces")
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
