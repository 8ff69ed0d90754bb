package layout

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// The providers' networks, as they are: each cluster's nodes sit on a private network behind
// a router of their provider (a network namespace) that translates their addresses, and the
// routers meet on the lab's internet (a namespace of its own, routing between them), which
// carries only UDP to the WireGuard ports and TCP to the API servers' published addresses.
// What a pod sends to another cluster crosses it inside WireGuard only: the internet counts
// every packet with a pod's address in clear (Cleartext), which must stay at zero.

// NATKind is how a provider's router translates its nodes' addresses.
type NATKind string

const (
	// OneToOneNAT gives every node a public address of its own (its ExternalIP), both ways:
	// a cloud's public IP per instance.
	OneToOneNAT NATKind = "1:1 NAT"
	// SourceNAT hides every node behind one public address, with no way in: an on-prem site.
	SourceNAT NATKind = "source NAT"
	// PrivateNAT hides every node behind one public address too (a cloud's NAT gateway), and
	// lets in only the WireGuard ports of another, a load balancer's, each forwarded to the
	// gateway node whose health check says it is the active gateway for that port's remote: a
	// managed cluster whose nodes are private, with a UDP network load balancer in front of its
	// gateways.
	PrivateNAT NATKind = "private, one load balancer"
)

// ProviderNetwork is a cluster's provider network.
type ProviderNetwork struct {
	// Provider names it for people: "AWS VPC".
	Provider string
	// CIDR is the private network of the nodes (their InternalIPs): the router has its first
	// address, the API server's private address is on it too.
	CIDR string
	NAT  NATKind
	// SourceNATAddr is the one public address of a SourceNAT or PrivateNAT network's egress.
	SourceNATAddr string
	// LoadBalancerAddr is the public address of a PrivateNAT network's load balancer, which
	// its gateway nodes publish as their endpoint.
	LoadBalancerAddr string
	// MTU is the largest packet the private network carries.
	MTU int
	// Uplink is the point-to-point network between the router and the internet: the internet
	// has its first address, the router its second.
	Uplink string
}

const (
	// InternetNetns is the network namespace of the lab's internet.
	InternetNetns = NetnsPrefix + "internet"
	// InternetCIDR holds every public address: the API servers' published ones, the nodes'
	// ExternalIPs, the source NAT's. A documentation range, like the uplinks' (198.51.100.0/24);
	// the private networks and pods are parts of the benchmark range 198.18.0.0/15.
	InternetCIDR = "203.0.113.0/24"
	// PodsCIDR covers every cluster's pod range: what the internet must never see in clear.
	PodsCIDR = "198.18.0.0/16"
	// CleartextChain counts, on the internet, the packets with a pod's address.
	CleartextChain = "SEMLAB-CLEARTEXT"
	// WireGuardChain counts, on the internet, the WireGuard packets it carried.
	WireGuardChain = "SEMLAB-WIREGUARD"
	// LoadBalancerChain is the chain, in the nat table of a private network's router, of the load
	// balancer's forwards (lab/cmd/loadbalancer): each WireGuard port of its address to the
	// gateway node that is healthy for it.
	LoadBalancerChain = "SEMLAB-LB"
)

// VPCNetns is the network namespace of cluster's provider router: its private network's
// bridge, NAT and firewall, with routes to every node's pods. The lab reaches the cluster's
// pods from there, as from a machine in the provider's network.
func VPCNetns(cluster string) string { return NetnsPrefix + cluster + "-vpc" }

// Gateway is the router's address on the private network: the nodes' default route.
func (p ProviderNetwork) Gateway() string {
	return AddrAdd(netip.MustParsePrefix(p.CIDR).Addr(), 1).String()
}

// InternetEnd is the internet's address on the uplink.
func (p ProviderNetwork) InternetEnd() string {
	return AddrAdd(netip.MustParsePrefix(p.Uplink).Addr(), 1).String()
}

// RouterEnd is the router's address on the uplink.
func (p ProviderNetwork) RouterEnd() string {
	return AddrAdd(netip.MustParsePrefix(p.Uplink).Addr(), 2).String()
}

// PublicAddrs are the public addresses of cluster's nodes (its source NAT's for SourceNAT, and
// its load balancer's too for PrivateNAT).
func PublicAddrs(spec ClusterSpec, nodes []Node) []string {
	switch spec.Network.NAT {
	case SourceNAT:
		return []string{spec.Network.SourceNATAddr}
	case PrivateNAT:
		return []string{spec.Network.SourceNATAddr, spec.Network.LoadBalancerAddr}
	}
	var out []string
	for _, n := range nodes {
		if n.Cluster == spec.Name && n.ExternalIP != "" {
			out = append(out, n.ExternalIP)
		}
	}
	return out
}

// InternetCounters are the packets the lab's internet counted: WireGuard's, and those with a
// pod's address in clear.
type InternetCounters struct {
	WireGuard, Cleartext int64
}

// ReadInternetCounters reads the internet's counters.
func ReadInternetCounters() (InternetCounters, error) {
	var c InternetCounters
	var err error
	if c.WireGuard, err = chainPackets(InternetNetns, WireGuardChain); err != nil {
		return c, err
	}
	c.Cleartext, err = chainPackets(InternetNetns, CleartextChain)
	return c, err
}

// chainPackets is how many packets the rules jumping to chain in netns's filter table counted.
func chainPackets(netns, chain string) (int64, error) {
	out, err := exec.Command("ip", "netns", "exec", netns, "iptables", "-w", "-L", "-v", "-x", "-n").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: iptables -L: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	var total int64
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		// pkts bytes target ...
		if len(f) > 2 && f[2] == chain {
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %w", netns, line, err)
			}
			total += n
		}
	}
	return total, nil
}
