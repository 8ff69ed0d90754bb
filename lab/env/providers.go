package env

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
)

// ProviderNetwork is a cluster's provider network.
type ProviderNetwork struct {
	// Provider names it for people: "AWS VPC".
	Provider string
	// CIDR is the private network of the nodes (their InternalIPs): the router has its first
	// address, the API server's private address is on it too.
	CIDR string
	NAT  NATKind
	// SourceNATAddr is the one public address of a SourceNAT network.
	SourceNATAddr string
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
	// uplinkLink is a router's end of its veth to the internet.
	uplinkLink = linkPrefix + "up"
	// cleartextChain counts, on the internet, the packets with a pod's address.
	cleartextChain = "SEMLAB-CLEARTEXT"
	// wireguardChain counts, on the internet, the WireGuard packets it carried.
	wireguardChain = "SEMLAB-WIREGUARD"
)

// VPCNetns is the network namespace of cluster's provider router: its private network's
// bridge, NAT and firewall, with routes to every node's pods. The lab reaches the cluster's
// pods from there, as from a machine in the provider's network.
func VPCNetns(cluster string) string { return NetnsPrefix + cluster + "-vpc" }

// gateway is the router's address on the private network: the nodes' default route.
func (p ProviderNetwork) gateway() string {
	return AddrAdd(netip.MustParsePrefix(p.CIDR).Addr(), 1).String()
}

// internetEnd and routerEnd are the uplink's two addresses.
func (p ProviderNetwork) internetEnd() string {
	return AddrAdd(netip.MustParsePrefix(p.Uplink).Addr(), 1).String()
}

func (p ProviderNetwork) routerEnd() string {
	return AddrAdd(netip.MustParsePrefix(p.Uplink).Addr(), 2).String()
}

// withBits is addr with the prefix length of cidr, as an address of a link on it.
func withBits(addr, cidr string) string {
	return addr + "/" + strconv.Itoa(netip.MustParsePrefix(cidr).Bits())
}

// PublicAddrs are the public addresses of cluster's nodes (its source NAT's for SourceNAT).
func PublicAddrs(spec ClusterSpec, nodes []Node) []string {
	if spec.Network.NAT == SourceNAT {
		return []string{spec.Network.SourceNATAddr}
	}
	var out []string
	for _, n := range nodes {
		if n.Cluster == spec.Name && n.ExternalIP != "" {
			out = append(out, n.ExternalIP)
		}
	}
	return out
}

// wireguardPortRange is the UDP ports the internet and the clouds' firewalls open: those the
// getting-started guide's links give the devices (docs/getting-started.md, its firewall), and
// which it tells its reader to open.
const wireguardPortRange = "51821:51822"

// routerRules are the iptables-restore rules of spec's router: the NAT between the nodes'
// private addresses and their public ones, and the provider's firewall, which lets in from the
// internet only the WireGuard ports (1:1 NAT) or nothing but answers (source NAT).
func routerRules(spec ClusterSpec, nodes []Node) string {
	var nat []string
	switch spec.Network.NAT {
	case OneToOneNAT:
		for _, n := range nodes {
			if n.Cluster == spec.Name && n.ExternalIP != "" {
				nat = append(nat,
					fmt.Sprintf("-A PREROUTING -i %s -d %s -j DNAT --to-destination %s", uplinkLink, n.ExternalIP, n.InternalIP),
					fmt.Sprintf("-A POSTROUTING -o %s -s %s -j SNAT --to-source %s", uplinkLink, n.InternalIP, n.ExternalIP))
			}
		}
	case SourceNAT:
		nat = append(nat, fmt.Sprintf("-A POSTROUTING -o %s -s %s -j SNAT --to-source %s", uplinkLink, spec.Network.CIDR, spec.Network.SourceNATAddr))
	}
	filter := []string{fmt.Sprintf("-A FORWARD -i %s -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT", uplinkLink)}
	if spec.Network.NAT == OneToOneNAT {
		filter = append(filter, fmt.Sprintf("-A FORWARD -i %s -p udp --dport %s -j ACCEPT", uplinkLink, wireguardPortRange))
	}
	filter = append(filter, fmt.Sprintf("-A FORWARD -i %s -j DROP", uplinkLink))
	return iptablesRestore(map[string][]string{"nat": nat, "filter": filter})
}

// internetRules are the iptables-restore rules of the internet: it counts every packet with a
// pod's address (cleartextChain) and the WireGuard packets (wireguardChain) it sees, forwards
// only UDP to the WireGuard ports and what answers it, and accepts only TCP to the API
// servers' published addresses. No ICMP crosses it, as through many a firewall: a packet too
// large for a path is lost, not answered.
func internetRules(apiPorts map[string]string) string {
	filter := []string{
		":" + cleartextChain + " - [0:0]",
		":" + wireguardChain + " - [0:0]",
		"-A FORWARD -s " + PodsCIDR + " -j " + cleartextChain,
		"-A FORWARD -d " + PodsCIDR + " -j " + cleartextChain,
		"-A INPUT -s " + PodsCIDR + " -j " + cleartextChain,
		"-A FORWARD -p udp --dport " + wireguardPortRange + " -j " + wireguardChain,
		"-A FORWARD -p udp --dport " + wireguardPortRange + " -j ACCEPT",
		"-A FORWARD -m conntrack --ctstate ESTABLISHED -j ACCEPT",
		"-A INPUT -i lo -j ACCEPT",
		"-A INPUT -m conntrack --ctstate ESTABLISHED -j ACCEPT",
	}
	for _, spec := range ClusterSpecs {
		filter = append(filter, fmt.Sprintf("-A INPUT -p tcp -d %s --dport %s -j ACCEPT", spec.PublicAPIAddr, apiPorts[spec.Name]))
	}
	policies := map[string]string{"INPUT": "DROP", "FORWARD": "DROP"}
	return iptablesRestoreWith(policies, map[string][]string{"filter": filter})
}

// iptablesRestore is the iptables-restore input that appends rules to the built-in chains of
// each table, which keep their ACCEPT policy.
func iptablesRestore(tables map[string][]string) string {
	return iptablesRestoreWith(nil, tables)
}

// iptablesRestoreWith is iptablesRestore with the filter table's chains' policies set.
func iptablesRestoreWith(policies map[string]string, tables map[string][]string) string {
	var b strings.Builder
	for _, table := range []string{"nat", "filter"} {
		rules, ok := tables[table]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "*%s\n", table)
		if table == "filter" {
			for _, chain := range []string{"INPUT", "FORWARD", "OUTPUT"} {
				policy := policies[chain]
				if policy == "" {
					policy = "ACCEPT"
				}
				fmt.Fprintf(&b, ":%s %s [0:0]\n", chain, policy)
			}
		}
		for _, r := range rules {
			fmt.Fprintln(&b, r)
		}
		fmt.Fprintln(&b, "COMMIT")
	}
	return b.String()
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
	if c.WireGuard, err = chainPackets(InternetNetns, wireguardChain); err != nil {
		return c, err
	}
	c.Cleartext, err = chainPackets(InternetNetns, cleartextChain)
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
