package layout

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"path/filepath"
	"slices"
)

// ClusterSpec is one cluster of the lab.
type ClusterSpec struct {
	Name string
	// ServiceCIDR is the cluster's Service range. The ranges do not overlap, as in a real
	// multi-cluster network, so a ClusterIP tells which cluster it belongs to.
	ServiceCIDR string
	// PodCIDR is where the sample pods' IPs come from: a part of 198.18.0.0/15, the benchmark
	// range, so nothing in the lab ever names a real address.
	PodCIDR string
	// APIAddr is the API server's private address, on the provider's network, where the
	// cluster's nodes and pods reach it: the endpoint of the cluster's kubernetes Service.
	APIAddr string
	// PublicAPIAddr is the API server's published address on the internet, where the other
	// clusters' controllers and the user's workstation reach it.
	PublicAPIAddr string
	// Network is the provider network the cluster's nodes sit on.
	Network ProviderNetwork
	// Gateways says the cluster reaches every remote through gateway nodes (all its nodes are
	// gateway nodes), and the remotes reach it through its active gateway, behind its load
	// balancer; else it is in the mesh.
	Gateways bool
}

// APIServiceIP is the ClusterIP of the cluster's kubernetes Service: the first of its range.
func (c ClusterSpec) APIServiceIP() string {
	return AddrAdd(netip.MustParsePrefix(c.ServiceCIDR).Addr(), 1).String()
}

// DNSServiceIP is the ClusterIP of the cluster's DNS Service (kube-dns), as kubeadm picks it.
func (c ClusterSpec) DNSServiceIP() string {
	return AddrAdd(netip.MustParsePrefix(c.ServiceCIDR).Addr(), 10).String()
}

// ClusterSpecs are the lab's clusters, named as in the Semaphore blog post: two clouds and an
// on-prem data centre.
// aws and gcp are clouds. aws's nodes each have a public address by 1:1 NAT; gcp's are private
// (a private GKE cluster: egress through a NAT gateway, and one load balancer address in front
// of its gateway nodes), on a network carrying 1460-byte packets, GCP's default. merit is
// on-prem, behind one source-NAT address with no way in.
var ClusterSpecs = []ClusterSpec{
	{Name: "aws", ServiceCIDR: "10.101.0.0/16", PodCIDR: "198.18.1.0/24", APIAddr: "198.19.1.2", PublicAPIAddr: "203.0.113.1",
		Network: ProviderNetwork{Provider: "AWS VPC", CIDR: "198.19.1.0/24", NAT: OneToOneNAT, MTU: 1500, Uplink: "198.51.100.0/30"}},
	{Name: "gcp", ServiceCIDR: "10.102.0.0/16", PodCIDR: "198.18.2.0/24", APIAddr: "198.19.2.2", PublicAPIAddr: "203.0.113.2",
		Network: ProviderNetwork{Provider: "GCP VPC", CIDR: "198.19.2.0/24", NAT: PrivateNAT, MTU: 1460, Uplink: "198.51.100.4/30",
			SourceNATAddr: "203.0.113.20", LoadBalancerAddr: "203.0.113.21"},
		Gateways: true},
	{Name: "merit", ServiceCIDR: "10.103.0.0/16", PodCIDR: "198.18.3.0/24", APIAddr: "198.19.3.2", PublicAPIAddr: "203.0.113.3",
		Network: ProviderNetwork{Provider: "on-prem", CIDR: "198.19.3.0/24", NAT: SourceNAT, MTU: 1500, Uplink: "198.51.100.8/30", SourceNATAddr: "203.0.113.30"}},
}

// GatewayLabel is the label of the gateway nodes that the wireguard chart selects by default
// (gatewayNodeSelector), with the value "true".
const GatewayLabel = "wireguard.semaphore.uw.io/gateway"

// SemaphoreNamespace is the namespace the umbrella chart is installed in: the controllers'
// Leases and the service mirror's mirrors live there.
const SemaphoreNamespace = "semaphore"

// KubeconfigFile is the lab's kubeconfig (in the lab directory): a context per cluster.
const KubeconfigFile = "kubeconfig"

// ClusterNames are the names of the lab's clusters, in order.
func ClusterNames() []string {
	names := make([]string, len(ClusterSpecs))
	for i, c := range ClusterSpecs {
		names[i] = c.Name
	}
	return names
}

// SpecOf is the spec of the cluster named name.
func SpecOf(name string) ClusterSpec {
	return ClusterSpecs[slices.IndexFunc(ClusterSpecs, func(c ClusterSpec) bool { return c.Name == name })]
}

// RemotesOf are the clusters that cluster reads from: all the others.
func RemotesOf(cluster string) []string {
	var remotes []string
	for _, c := range ClusterSpecs {
		if c.Name != cluster {
			remotes = append(remotes, c.Name)
		}
	}
	return remotes
}

// NodeName is the name of the i-th node (from 0) of cluster.
func NodeName(cluster string, i int) string {
	return fmt.Sprintf("%s-node-%d", cluster, i+1)
}

// nodeZone is the zone of the i-th node (from 0) of cluster: <cluster>-a, <cluster>-b, ...
func nodeZone(cluster string, i int) string {
	return fmt.Sprintf("%s-%c", cluster, 'a'+i)
}

// NodePodCIDR is the pod CIDR of the i-th node of cluster: an equal part of the cluster's.
func NodePodCIDR(cluster string, i int) netip.Prefix {
	for _, c := range ClusterSpecs {
		if c.Name == cluster {
			p := netip.MustParsePrefix(c.PodCIDR)
			split := bits.Len(uint(NodesPerCluster - 1))
			size := 1 << (32 - p.Bits() - split)
			return netip.PrefixFrom(AddrAdd(p.Addr(), i*size), p.Bits()+split)
		}
	}
	panic("no cluster " + cluster)
}

// AddrAdd is the IPv4 address n after a.
func AddrAdd(a netip.Addr, n int) netip.Addr {
	b := a.As4()
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(n))
	return netip.AddrFrom4(b)
}

// LabNodes are the lab's nodes: NodesPerCluster in every cluster, each keeping its state in a
// directory of dir.
func LabNodes(dir string) []Node {
	var out []Node
	for ci, c := range ClusterSpecs {
		for i := range NodesPerCluster {
			name := NodeName(c.Name, i)
			// aws-node-1 is .11, gcp-node-2 .22: the address tells the node.
			host := 10*(ci+1) + i + 1
			n := Node{
				Name:       name,
				Cluster:    c.Name,
				Netns:      fmt.Sprintf("%s%s-%d", NetnsPrefix, c.Name, i+1),
				InternalIP: AddrAdd(netip.MustParsePrefix(c.Network.CIDR).Addr(), host).String(),
				Dir:        filepath.Join(dir, name),
				Zone:       nodeZone(c.Name, i),
			}
			if c.Name != CalicoCluster {
				n.PodCIDR = NodePodCIDR(c.Name, i).String()
			}
			if c.Network.NAT == OneToOneNAT {
				n.ExternalIP = AddrAdd(netip.MustParsePrefix(InternetCIDR).Addr(), host).String()
			}
			out = append(out, n)
		}
	}
	return out
}
