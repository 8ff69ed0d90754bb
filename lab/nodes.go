package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// The lab's nodes. Every node of every cluster is a network namespace, joined to the others by
// an underlay (a bridge in a namespace of its own), with the addresses of the sample pods it
// hosts on its loopback and no route to any other pod: traffic between the clusters' pods can
// only go through the WireGuard devices that semaphore-wireguard sets up on each node
// (wireguard.go). Nothing is created in the host's network namespace: every link is created
// directly in the namespace it belongs to, so deleting the namespaces deletes everything.
//
// The network namespaces need root (and Linux); without, the lab runs without nodes and says so.

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
	// netnsDir is where `ip netns add` keeps its named network namespaces.
	netnsDir = "/run/netns"
	// samplePodHost is the host number of a node's first sample pod in the node's pod CIDR.
	samplePodHost = 10
)

// NodesState is the lab's nodes, or why it runs without them.
type NodesState struct {
	// Skipped says why there are no nodes (and so no semaphore-wireguard and no ping).
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
	PodCIDR  string `json:"podCIDR"`
	// Pods are the addresses of the sample pods the node hosts, which it answers for.
	Pods []string `json:"pods,omitempty"`
}

// nodeName is the name of the i-th node (from 0) of cluster.
func nodeName(cluster string, i int) string {
	return fmt.Sprintf("%s-node-%d", cluster, i+1)
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

// labNodes are the lab's nodes: nodesPerCluster in every cluster, each hosting the sample pods
// that workloads.go places on it.
func labNodes() []NodeState {
	underlay := netip.MustParsePrefix(underlayCIDR).Addr()
	pods := samplePodsByNode()
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
				Pods:     pods[name],
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

// startNodes creates the Node objects and, where the machine allows, the nodes' network
// namespaces: the underlay, the pods' addresses, and forwarders that give every node the API
// servers at the address they have on this machine.
func (l *lab) startNodes(ctx context.Context) error {
	nodes := labNodes()
	// The Nodes are API objects that need no privilege: with or without the namespaces, the
	// sample pods' nodeName names a Node.
	if err := l.createNodeObjects(ctx, nodes); err != nil {
		return err
	}
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
		if netnsExists(ns) {
			return fmt.Errorf("network namespace %s exists already: another lab with nodes runs on this machine, or one that died left it behind (ip netns del %s)", ns, ns)
		}
	}
	var stops []func()
	l.onTeardown(func() {
		for _, stop := range stops {
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
	if err := ipCommands(
		[]string{"-n", underlayNetns, "link", "add", bridgeLink, "type", "bridge"},
		[]string{"-n", underlayNetns, "link", "set", bridgeLink, "up"},
	); err != nil {
		return err
	}
	prefixLen := netip.MustParsePrefix(underlayCIDR).Bits()
	for _, n := range nodes {
		if err := l.addNetns(n.Netns); err != nil {
			return err
		}
		cmds := [][]string{
			{"-n", n.Netns, "link", "add", nodeLink, "type", "veth", "peer", "name", n.veth(), "netns", underlayNetns},
			{"-n", underlayNetns, "link", "set", n.veth(), "master", bridgeLink, "up"},
			{"-n", n.Netns, "addr", "add", n.Underlay + "/" + strconv.Itoa(prefixLen), "dev", nodeLink},
			{"-n", n.Netns, "link", "set", nodeLink, "up"},
		}
		// A pod's address on the node's loopback: an address the node answers for, with no
		// veth and no namespace per pod, which the data path does not need.
		for _, p := range n.Pods {
			cmds = append(cmds, []string{"-n", n.Netns, "addr", "add", p + "/32", "dev", "lo"})
		}
		if err := ipCommands(cmds...); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}

	// A node's network reaches the API servers at the same address as this machine's does
	// (https://127.0.0.1:<port>), so every kubeconfig written for this machine works unchanged
	// on the nodes: a forwarder inside each namespace listens on each port an API server (or
	// the cuttable proxy in front of it) has on this machine's loopback.
	addrs, err := l.apiServerAddrs()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for _, a := range addrs {
			stop, err := forwardIntoNetns(n.Netns, a)
			if err != nil {
				return err
			}
			stops = append(stops, stop)
		}
	}

	// The underlay works: the first node reaches every other one.
	for _, n := range nodes[1:] {
		if _, err := pingInNetns(nodes[0].Netns, nodes[0].Underlay, n.Underlay, 2*time.Second); err != nil {
			return fmt.Errorf("underlay: %s cannot reach %s: %w", nodes[0].Name, n.Name, err)
		}
	}

	l.mu.Lock()
	l.state.Nodes = &NodesState{Underlay: underlayCIDR, Nodes: nodes}
	l.mu.Unlock()
	l.saveState()
	l.logf("created %d nodes as network namespaces (%s*) on the underlay %s", len(nodes), netnsPrefix, underlayCIDR)
	return nil
}

// skipNodes records that the lab runs without nodes, and why.
func (l *lab) skipNodes(reason string) {
	l.logf("skipping the nodes' network namespaces, semaphore-wireguard and the ping through it: %s", reason)
	l.mu.Lock()
	l.state.Nodes = &NodesState{Skipped: reason}
	l.mu.Unlock()
	l.saveState()
}

// createNodeObjects creates every node's Node with its pod CIDR and, through the status
// subresource as a kubelet would, its underlay address as InternalIP: what semaphore-wireguard
// publishes as the node's endpoint and routes the pod CIDR to.
func (l *lab) createNodeObjects(ctx context.Context, nodes []NodeState) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range nodes {
		api := l.clusters[n.Cluster].Client.CoreV1().Nodes()
		obj, err := api.Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{corev1.LabelHostname: n.Name}},
			Spec:       corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%s: node %s: %w", n.Cluster, n.Name, err)
		}
		obj.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.Underlay},
			{Type: corev1.NodeHostName, Address: n.Name},
		}
		if _, err := api.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("%s: node %s: %w", n.Cluster, n.Name, err)
		}
	}
	return nil
}

// apiServerAddrs are the host:port addresses at which the kubeconfigs of this machine reach
// the API servers: directly, and through the proxies that can cut a cluster off.
func (l *lab) apiServerAddrs() ([]string, error) {
	var addrs []string
	for _, spec := range clusterSpecs {
		c := l.clusters[spec.Name]
		urls := []string{c.Config.Host}
		for _, path := range []string{c.Kubeconfig, c.DirectKubeconfig} {
			kc, err := clientcmd.LoadFromFile(path)
			if err != nil {
				return nil, err
			}
			for _, cl := range kc.Clusters {
				urls = append(urls, cl.Server)
			}
		}
		for _, s := range urls {
			u, err := url.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("%s: API server %q: %w", spec.Name, s, err)
			}
			if !slices.Contains(addrs, u.Host) {
				addrs = append(addrs, u.Host)
			}
		}
	}
	return addrs, nil
}

// addNetns creates a network namespace with its loopback up. It records the name in the state
// first, so that whatever cleans up after a lab that died (cleanUp) deletes it.
func (l *lab) addNetns(name string) error {
	l.mu.Lock()
	l.state.Namespaces = append(slices.Clip(l.state.Namespaces), name)
	l.mu.Unlock()
	l.saveState()
	return ipCommands(
		[]string{"netns", "add", name},
		[]string{"-n", name, "link", "set", "lo", "up"},
	)
}

// deleteNamespaces deletes the network namespaces the lab created, and with them every link
// and address in them.
func (l *lab) deleteNamespaces() {
	l.mu.Lock()
	names := l.state.Namespaces
	l.mu.Unlock()
	var existing []string
	for _, ns := range names {
		if netnsExists(ns) {
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
		if !netnsExists(ns) {
			continue
		}
		fmt.Fprintf(out, "lab: deleting network namespace %s\n", ns)
		errs = append(errs, ipCommands([]string{"netns", "del", ns}))
	}
	return errors.Join(errs...)
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// ipCommands runs ip (iproute2) with each of args in turn, stopping at the first that fails.
func ipCommands(args ...[]string) error {
	for _, a := range args {
		if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(a, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
