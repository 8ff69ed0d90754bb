package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// The lab's nodes. Every node of every cluster is a network namespace running containerd,
// kubelet and kube-proxy (lab/node), on its provider's private network (providers.go): a
// bridge in the provider's router namespace, which translates between it and the internet.
// Its pods get addresses from its pod CIDR on a CNI bridge; the nodes of a cluster route each
// other's pod CIDRs over their private network, and nothing routes one cluster's pods to
// another's: that traffic only goes through the WireGuard devices semaphore-wireguard sets up
// on each node. Each cluster's API server, on this machine's loopback, is forwarded to at its
// private address in its provider's network (the kubernetes Service's endpoint, for the
// kubelets, kube-proxy and pods) and at its published address on the internet (for the other
// clusters and the user's workstation). Nothing is created in the host's network namespace:
// every link is created directly in the namespace it belongs to, so deleting the namespaces
// deletes everything.
//
// The nodes need root (and Linux); without, the lab runs without nodes, and so without pods, and
// says so.

const (
	// linkPrefix starts the name of every link of the lab (at most 15 bytes), so that one
	// ending up where it should not would be easy to tell.
	linkPrefix = "semlab-"
	bridgeLink = linkPrefix + "br"
	// nodeLink is a node's end of its veth to its provider network's bridge.
	nodeLink = linkPrefix + "ul"
	// silentUpstreamDNS is the upstream resolver of the clusters' CoreDNS: an address on the
	// lab's internet that no namespace has, so that a query for a name outside the clusters
	// goes nowhere (and never leaves the machine).
	silentUpstreamDNS = "203.0.113.254"
	// sysctlsFile (in the lab directory) keeps the machine's sysctls that kubelet changes, as
	// they were before the first node started, until they are restored.
	sysctlsFile = "nodes/sysctls.json"
	// clusterDomain is every cluster's DNS domain.
	clusterDomain = "cluster.local"
)

// nodeVeth is the provider network's end of node n's veth: linkPrefix and the namespace's
// name after NetnsPrefix (semlab-aws-1).
func nodeVeth(n layout.Node) string {
	return linkPrefix + strings.TrimPrefix(n.Netns, layout.NetnsPrefix)
}

// startNodes creates the nodes where the machine allows: the providers' networks and the
// internet with the API servers' addresses, a network namespace per node with routes to its
// cluster's other nodes' pods, and
// in each a real node (containerd, kubelet, kube-proxy, Calico) registered as the Node the lab
// made with its pod CIDR (none in the Calico-way cluster, where calico-ipam hands addresses out).
func (l *Lab) startNodes(ctx context.Context) error {
	nodes := layout.LabNodes(l.Path("nodes"))
	reason := nodesUnsupported()
	if !l.withNodes {
		reason = "-nodes=false: the control-plane part only, as without root"
	}
	if reason != "" {
		l.skipNodes(reason)
		return nil
	}
	if err := namespacesFree(nodes); err != nil {
		return err
	}
	var stops []func()
	l.onTeardown(func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
		l.deleteNamespaces()
	})
	if err := l.addNetns(layout.InternetNetns); err != nil {
		// The first namespace tells whether this machine lets us create any: a container
		// without CAP_SYS_ADMIN does not, even as root.
		l.skipNodes(fmt.Sprintf("cannot create network namespaces: %v", err))
		return nil
	}
	if err := l.createNetwork(nodes, &stops); err != nil {
		return err
	}
	if err := l.createNodeObjects(ctx, nodes); err != nil {
		return err
	}
	if err := l.startCalico(ctx); err != nil {
		return err
	}
	stop, err := l.runNodes(ctx, nodes)
	stops = append(stops, stop)
	if err != nil {
		return err
	}
	l.update(func(rec *layout.Record) { rec.Nodes = &layout.Nodes{Nodes: nodes} })
	return l.waitNodesReady(ctx, nodes)
}

// runNodes starts containerd, kubelet and kube-proxy on every node, each kubelet with its
// node's credentials (system:node:<name>, which the Node authorizer limits to its own node and
// pods) and kube-proxy with system:kube-proxy's. stop stops them all and restores the
// machine-wide settings kubelet changes.
func (l *Lab) runNodes(ctx context.Context, nodes []layout.Node) (stop func(), err error) {
	var running []*node.Node
	sysctls := l.Path(sysctlsFile)
	stop = func() {
		l.keepPodLogs()
		var wg sync.WaitGroup
		for _, n := range running {
			wg.Go(func() {
				if err := n.Stop(); err != nil {
					l.Logf("stopping a node: %v", err)
				}
			})
		}
		wg.Wait()
		if err := node.RestoreSysctls(sysctls); err != nil {
			l.Logf("restoring the machine's sysctls: %v", err)
		}
		l.Logf("stopped the nodes")
	}
	if err := os.MkdirAll(l.Path("nodes"), 0o755); err != nil {
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
	l.Logf("started containerd, kubelet and kube-proxy on %d nodes (network namespaces %s*, internet %s)", len(nodes), layout.NetnsPrefix, layout.InternetCIDR)
	return stop, nil
}

// startNode starts node n with its credentials, and keyDir private to it.
func (l *Lab) startNode(ctx context.Context, n layout.Node, keyDir string) (*node.Node, error) {
	spec := layout.SpecOf(n.Cluster)
	c, server := l.clusters[n.Cluster], l.privateAPIServer(n.Cluster)
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
	return node.Start(ctx, node.Config{
		Name:  n.Name,
		Netns: n.Netns,
		IP:    n.InternalIP,
		// The lab sets the Nodes' addresses, as a cloud controller manager does.
		ExternalCloudProvider: true,
		PodCIDR:               n.PodCIDR,
		Calico:                l.calicoNode(n),
		ClusterCIDR:           spec.PodCIDR,
		ClusterDNS:            spec.DNSServiceIP(),
		ClusterDomain:         clusterDomain,
		Kubeconfig:            kubeletKubeconfig,
		ProxyKubeconfig:       proxyKubeconfig,
		// The CA of the API server's client certificate for kubelets (clusterPKI).
		ClientCAFile: l.Path("clusters", n.Cluster, "pki", caFile),
		Registry:     l.registry,
		SandboxImage: l.imageRef(pauseImage),
		Dir:          n.Dir,
		LogDir:       l.Path("logs"),
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
func (l *Lab) keepPodLogs() {
	dir := l.Path("logs", "pods")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	for _, p := range l.Record().Pods {
		data, err := os.ReadFile(p.Log)
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, p.Cluster+"_"+p.Namespace+"_"+p.Name+".log"), data, 0o644)
	}
}

// waitNodesReady waits until every node is Ready.
func (l *Lab) waitNodesReady(ctx context.Context, nodes []layout.Node) error {
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
	l.Logf("the %d nodes are Ready", len(nodes))
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
func (l *Lab) skipNodes(reason string) {
	l.Logf("skipping the nodes (and so every pod: controllers, CoreDNS, sample workloads): %s", reason)
	l.update(func(rec *layout.Record) { rec.Nodes = &layout.Nodes{Skipped: reason} })
}

// createNodeObjects creates every node's Node with its pod CIDR, which no controller allocates
// here (kube-controller-manager runs with --allocate-node-cidrs=false), and, playing the cloud
// controller manager, its zone and addresses: the InternalIP on the provider's network and the
// ExternalIP its 1:1 NAT gives it. The kubelet (--cloud-provider=external) registers into it,
// keeping them, and sets the rest of its status. The Calico-way cluster's Nodes have no pod
// CIDR: its IPAM blocks say where the pods are (calico.go).
func (l *Lab) createNodeObjects(ctx context.Context, nodes []layout.Node) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range nodes {
		spec := corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}}
		if n.Cluster == layout.CalicoCluster {
			spec = corev1.NodeSpec{}
		}
		nodes := l.clusters[n.Cluster].Client.CoreV1().Nodes()
		created, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: nodeMeta(n), Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%s: node %s: %w", n.Cluster, n.Name, err)
		}
		created.Status.Addresses = nodeAddresses(n)
		if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("%s: the addresses of node %s: %w", n.Cluster, n.Name, err)
		}
	}
	return nil
}

// nodeMeta is node n's name, labels and annotations: its host name and zone, and on a cluster
// that reaches its remotes through gateways, the gateway label of its node pool and the
// endpoint it publishes, its load balancer's address (docs/gateways.md).
func nodeMeta(n layout.Node) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: n.Zone}}
	if spec := layout.SpecOf(n.Cluster); spec.Gateways {
		meta.Labels[layout.GatewayLabel] = "true"
		meta.Annotations = map[string]string{endpoint.OverrideAnnotation: spec.Network.LoadBalancerAddr}
	}
	return meta
}

// nodeAddresses are the addresses a cloud controller manager would give node n's Node.
func nodeAddresses(n layout.Node) []corev1.NodeAddress {
	out := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.InternalIP}}
	if n.ExternalIP != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: n.ExternalIP})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
}
