package env

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The providers' networks, as they are: each cluster's nodes sit on a private network behind
// a router of their provider (a network namespace) that translates their addresses, and the
// routers meet on the lab's internet (a namespace of its own, routing between them), which
// carries only UDP to the WireGuard ports and TCP to the API servers' published addresses.
// What a pod sends to another cluster crosses it inside WireGuard only: the internet counts
// every packet with a pod's address in clear (Cleartext), which must stay at zero.

const (
	// uplinkLink is a router's end of its veth to the internet.
	uplinkLink = linkPrefix + "up"
)

// withBits is addr with the prefix length of cidr, as an address of a link on it.
func withBits(addr, cidr string) string {
	return addr + "/" + strconv.Itoa(netip.MustParsePrefix(cidr).Bits())
}

// wireguardPortRange is the UDP ports the internet and the clouds' firewalls open: those the
// getting-started guide's links give the devices (docs/getting-started.md, its firewall), and
// which it tells its reader to open.
const wireguardPortRange = "51821:51822"

// routerRules are the iptables-restore rules of spec's router: the NAT between the nodes'
// private addresses and their public ones, and the provider's firewall, which lets in from the
// internet only the WireGuard ports (1:1 NAT, or a private network's load balancer) or nothing
// but answers (source NAT). A private network's load balancer (lab/cmd/loadbalancer) writes its
// forwards into layout.LoadBalancerChain, which the router's own rules only jump to.
func routerRules(spec layout.ClusterSpec, nodes []layout.Node) string {
	var nat []string
	switch spec.Network.NAT {
	case layout.OneToOneNAT:
		for _, n := range nodes {
			if n.Cluster == spec.Name && n.ExternalIP != "" {
				nat = append(nat,
					fmt.Sprintf("-A PREROUTING -i %s -d %s -j DNAT --to-destination %s", uplinkLink, n.ExternalIP, n.InternalIP),
					fmt.Sprintf("-A POSTROUTING -o %s -s %s -j SNAT --to-source %s", uplinkLink, n.InternalIP, n.ExternalIP))
			}
		}
	case layout.PrivateNAT:
		nat = append(nat, ":"+layout.LoadBalancerChain+" - [0:0]",
			fmt.Sprintf("-A PREROUTING -i %s -d %s -j %s", uplinkLink, spec.Network.LoadBalancerAddr, layout.LoadBalancerChain))
		fallthrough
	case layout.SourceNAT:
		nat = append(nat, fmt.Sprintf("-A POSTROUTING -o %s -s %s -j SNAT --to-source %s", uplinkLink, spec.Network.CIDR, spec.Network.SourceNATAddr))
	}
	filter := []string{fmt.Sprintf("-A FORWARD -i %s -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT", uplinkLink)}
	switch spec.Network.NAT {
	case layout.OneToOneNAT:
		filter = append(filter, fmt.Sprintf("-A FORWARD -i %s -p udp --dport %s -j ACCEPT", uplinkLink, wireguardPortRange))
	case layout.PrivateNAT:
		// What the load balancer forwarded, and nothing else.
		filter = append(filter, fmt.Sprintf("-A FORWARD -i %s -p udp --dport %s -m conntrack --ctstate DNAT --ctorigdst %s -j ACCEPT",
			uplinkLink, wireguardPortRange, spec.Network.LoadBalancerAddr))
	}
	filter = append(filter, fmt.Sprintf("-A FORWARD -i %s -j DROP", uplinkLink))
	return iptablesRestore(map[string][]string{"nat": nat, "filter": filter})
}

// internetRules are the iptables-restore rules of the internet: it counts every packet with a
// pod's address (layout.CleartextChain) and the WireGuard packets (layout.WireGuardChain) it sees, forwards
// only UDP to the WireGuard ports and what answers it, and accepts only TCP to the API
// servers' published addresses. No ICMP crosses it, as through many a firewall: a packet too
// large for a path is lost, not answered.
func internetRules(apiPorts map[string]string) string {
	filter := []string{
		":" + layout.CleartextChain + " - [0:0]",
		":" + layout.WireGuardChain + " - [0:0]",
		"-A FORWARD -s " + layout.PodsCIDR + " -j " + layout.CleartextChain,
		"-A FORWARD -d " + layout.PodsCIDR + " -j " + layout.CleartextChain,
		"-A INPUT -s " + layout.PodsCIDR + " -j " + layout.CleartextChain,
		"-A FORWARD -p udp --dport " + wireguardPortRange + " -j " + layout.WireGuardChain,
		"-A FORWARD -p udp --dport " + wireguardPortRange + " -j ACCEPT",
		"-A FORWARD -m conntrack --ctstate ESTABLISHED -j ACCEPT",
		"-A INPUT -i lo -j ACCEPT",
		"-A INPUT -m conntrack --ctstate ESTABLISHED -j ACCEPT",
	}
	for _, spec := range layout.ClusterSpecs {
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
