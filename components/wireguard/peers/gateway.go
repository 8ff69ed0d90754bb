package peers

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/kube-semaphore/semaphore/components/wireguard/overlap"
)

// A cluster reaches a remote through gateways (the gateway topology) when only some of its
// nodes, its gateways, hold a device for the remote: one of them, the active gateway, says so
// with GatewayAnnotation, and the remote's nodes peer with it alone, for the pod addresses of
// every node of its cluster. Its other nodes send their traffic for the remote to it over
// their own cluster's network.

// gatewaySuffix ends the annotation of a cluster's active gateway.
const gatewaySuffix = "gateway"

// GatewayAnnotation is the annotation by which a node says it is its cluster's active gateway
// toward cluster. Its value is the term of the election that made it active, a decimal number
// that grows with every change of gateway: a gateway cut off from its API server cannot remove
// its own annotation, and the one elected after it has the higher term.
func GatewayAnnotation(cluster string) string {
	return cluster + "." + annotationDomain + "/" + gatewaySuffix
}

// GatewayTerm is the value of GatewayAnnotation for term.
func GatewayTerm(term uint64) string { return strconv.FormatUint(term, 10) }

// ReasonBadGatewayTerm is why a node that says it is its cluster's gateway with a term that is
// not a decimal number is skipped; another node may still be the gateway.
const ReasonBadGatewayTerm = "bad_gateway_term"

// ThroughGateway reports whether the remote nodes reach the cluster named local through a
// gateway: one of them carries GatewayAnnotation(local), well-formed or not.
func ThroughGateway(local string, nodes []Node) bool {
	return slices.ContainsFunc(nodes, func(n Node) bool {
		_, ok := n.Annotations[GatewayAnnotation(local)]
		return ok
	})
}

// ActiveGateway is, of nodes, the one that says it is the active gateway toward local with the
// highest term (of two with the same, the first by name), and the nodes that say it with a term
// that is not a number. found is false when none says it with a number.
func ActiveGateway(local string, nodes []Node) (active Node, found bool, skipped []Skip) {
	var best uint64
	for _, n := range sortedByName(nodes) {
		text, ok := n.Annotations[GatewayAnnotation(local)]
		if !ok {
			continue
		}
		term, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			name := n.Name
			if skip := checkName(name); skip != nil {
				name = skip.Node
			}
			skipped = append(skipped, Skip{name, ReasonBadGatewayTerm, fmt.Sprintf("%s=%.32q: not a term", GatewayAnnotation(local), text)})
			continue
		}
		if !found || term > best {
			active, best, found = n, term, true
		}
	}
	return active, found, skipped
}

// DesiredThroughGateway returns the peer for the device of the cluster named local when the
// remote nodes reach it through a gateway: the active gateway, held to the rules of a peer
// (Desired) for its name, key and endpoint, whose allowed IPs are the pod CIDRs of every node of
// its cluster, in name order. Each node's pod CIDRs are held to the rules a peer's are; a node
// that breaks one has none of them routed and is skipped with the reason, the others' are
// routed all the same: a gateway carries its own cluster's pods, and nothing that cluster may
// not route. So is a node that claims an address another node has (the first by name keeps it;
// a single address borrowed from a larger range excepted). Nodes without pod CIDRs (none
// assigned yet) add nothing and are not skipped.
func DesiredThroughGateway(local string, nodes []Node, rules Rules) ([]Peer, []Skip) {
	gateway, found, skipped := ActiveGateway(local, nodes)
	if !found {
		return nil, skipped
	}
	gw := checkIdentity(local, gateway, rules)
	if gw.skip != nil {
		return nil, append(skipped, *gw.skip)
	}
	taken := overlap.New()
	for _, n := range sortedByName(nodes) {
		if len(n.PodCIDRs) == 0 {
			continue
		}
		if skip := checkName(n.Name); skip != nil {
			skipped = append(skipped, *skip)
			continue
		}
		allowed, skip := checkPodCIDRs(n, rules)
		if skip != nil {
			skipped = append(skipped, *skip)
			continue
		}
		if o := overlapping(allowed, taken); o != "" {
			skipped = append(skipped, Skip{n.Name, ReasonOverlappingIP, o})
			continue
		}
		for _, p := range allowed {
			taken.Add(p, n.Name)
		}
		gw.allowed = append(gw.allowed, allowed...)
	}
	if len(gw.allowed) == 0 {
		return nil, append(skipped, Skip{gateway.Name, ReasonNoPodCIDR, "no node of the gateway's cluster has a pod CIDR that may be routed"})
	}
	return []Peer{gw.peer(gateway)}, skipped
}

// sortedByName is a copy of nodes sorted by name.
func sortedByName(nodes []Node) []Node {
	out := slices.Clone(nodes)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
