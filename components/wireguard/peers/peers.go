// Package peers computes, without any I/O, what a node's WireGuard device for one remote
// cluster should hold: the device's name, the desired peers from the remote cluster's nodes,
// the routes to their pod CIDRs, and the minimal changes from the device's actual peers.
package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/wireguard/overlap"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// Annotation key suffixes. A node publishes, for each remote cluster <remote> it peers with,
// <remote>.wireguard.semaphore.uw.io/pubKey, .../endpoint (unless it cannot be reached) and
// .../path-mtu.
const (
	annotationDomain = "wireguard.semaphore.uw.io"
	pubKeySuffix     = "pubKey"
	endpointSuffix   = "endpoint"
	pathMTUSuffix    = "path-mtu"
)

// PubKeyAnnotation is the annotation holding a node's public key for the device that peers
// with cluster.
func PubKeyAnnotation(cluster string) string {
	return cluster + "." + annotationDomain + "/" + pubKeySuffix
}

// EndpointAnnotation is the annotation holding a node's host:port for cluster.
func EndpointAnnotation(cluster string) string {
	return cluster + "." + annotationDomain + "/" + endpointSuffix
}

// PathMTUAnnotation is the annotation holding the MTU of a node's underlay path toward cluster,
// which cluster's nodes keep their devices' MTU within.
func PathMTUAnnotation(cluster string) string {
	return cluster + "." + annotationDomain + "/" + pathMTUSuffix
}

// IsOwnAnnotation reports whether k is one of the annotations a node publishes for some cluster:
// <cluster>.wireguard.semaphore.uw.io/{pubKey,endpoint,path-mtu,gateway}.
func IsOwnAnnotation(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	cluster, domain, ok2 := strings.Cut(prefix, ".")
	return ok && ok2 && cluster != "" && domain == annotationDomain &&
		slices.Contains([]string{PubKeyAnnotation(cluster), EndpointAnnotation(cluster), PathMTUAnnotation(cluster), GatewayAnnotation(cluster)}, k)
}

// MaxDeviceName is Linux's limit on interface names (IFNAMSIZ - 1).
const MaxDeviceName = 15

// DevicePrefix starts the name of every device semaphore-wireguard owns.
const DevicePrefix = "wg-"

// DeviceName is the name of the device that peers with cluster: wg-<cluster> when it fits,
// otherwise wg- and a prefix of the name with a short hash, always within 15 characters.
func DeviceName(cluster string) string {
	name := DevicePrefix + cluster
	if len(name) <= MaxDeviceName {
		return name
	}
	sum := sha256.Sum256([]byte(cluster))
	hash := hex.EncodeToString(sum[:])[:6]
	keep := MaxDeviceName - len(DevicePrefix) - len(hash) - 1
	return DevicePrefix + strings.TrimRight(cluster[:keep], "-") + "-" + hash
}

// CheckDeviceNames reports an error when two clusters would share a device name.
func CheckDeviceNames(clusters []string) error {
	seen := map[string]string{}
	for _, c := range clusters {
		d := DeviceName(c)
		if other, ok := seen[d]; ok {
			return fmt.Errorf("clusters %q and %q would share WireGuard device %q", other, c, d)
		}
		seen[d] = c
	}
	return nil
}

// Node is what the computation needs of a remote node.
type Node struct {
	Name        string
	Annotations map[string]string
	PodCIDRs    []string
	// Addresses are the node's published addresses of type InternalIP and ExternalIP
	// (status.addresses): its endpoint must be one of them.
	Addresses []string
}

// Peer is one desired WireGuard peer: a remote node.
type Peer struct {
	Node      string
	PublicKey wgtypes.Key
	// Endpoint is where the node says it is reached; nil when it publishes none (it cannot be
	// reached, and WireGuard learns its endpoint from the handshakes it starts).
	Endpoint   *net.UDPAddr
	AllowedIPs []net.IPNet
	// PublishedPathMTU is the node's path-mtu annotation as published ("" when none), for the
	// caller to read (package mtu).
	PublishedPathMTU string
}

// Reasons a node is skipped, the reason label of the skipped-peers metric.
const (
	ReasonNotAnnotated  = "not_annotated"
	ReasonBadKey        = "bad_key"
	ReasonBadEndpoint   = "bad_endpoint"
	ReasonNoPodCIDR     = "no_pod_cidr"
	ReasonBadPodCIDR    = "bad_pod_cidr"
	ReasonDuplicateKey  = "duplicate_key"
	ReasonOverlappingIP = "overlapping_pod_cidr"
	// ReasonInvalidName: the node's name is not a DNS subdomain, which no conforming API
	// server accepts; a peer's name becomes a metric label (its handshake and traffic).
	ReasonInvalidName = "invalid_name"
	// ReasonForeignEndpoint: the endpoint's address is none of the node's own addresses and
	// lies in none of the remote's endpoint ranges.
	ReasonForeignEndpoint = "endpoint_not_node_address"
	// ReasonDuplicateEndpoint: another node of the remote publishes the same endpoint; every
	// node that does is skipped, as nothing tells which one is honest.
	ReasonDuplicateEndpoint = "duplicate_endpoint"
	// ReasonPeerLimit: the remote has more nodes that could be peers than its limit.
	ReasonPeerLimit = "peer_limit"
)

// Skip is a node that cannot be a peer, and why. Node is the node's name, or with
// ReasonInvalidName the start of it quoted, safe to log.
type Skip struct {
	Node   string
	Reason string
	Detail string
}

// Rules are what a remote's nodes are held to besides well-formed annotations.
type Rules struct {
	// Guard refuses the pod CIDRs the remote may not have routed to it.
	Guard addrguard.Remote
	// EndpointRanges are the ranges an endpoint may lie in without being one of its node's
	// addresses: the public addresses of a remote whose nodes sit behind a NAT.
	EndpointRanges []netip.Prefix
	// MaxPeers is the most peers the remote gets; 0 is no limit.
	MaxPeers int
}

// Desired returns the peers for the device of a cluster named local from the remote nodes,
// sorted by node name, and the nodes it had to skip. A node is a peer when it carries a valid
// public key for local, a valid endpoint or none (a node that cannot be reached publishes none),
// and at least one valid pod CIDR; it is skipped otherwise,
// and so are nodes whose key or pod CIDRs another node already uses (WireGuard routes each
// address to one peer only). The one overlap allowed is a single address inside another node's
// larger range (an address borrowed from another node's Calico IPAM block): WireGuard and the
// kernel pick the longest matching prefix, so it reaches the node that holds it.
//
// What a remote publishes is held to rules, and a node that breaks one is skipped whole, so
// that nothing of what it claims is configured or routed: its name must be a DNS subdomain (it
// becomes a metric label); its endpoint must be one of its own addresses or lie in
// rules.EndpointRanges, so that a remote cannot point the device at any host it likes; every
// pod CIDR must pass rules.Guard (the remote's ranges, never the local cluster's own or a
// special range, no wider than the minimum prefix length), with the guard's reason. Of the
// nodes that pass, those sharing an endpoint are all skipped (nothing tells which one is
// honest; nodes without an endpoint share none), and of the rest the first rules.MaxPeers by name
// are peers, so that one remote cannot grow the device without bound.
func Desired(local string, nodes []Node, rules Rules) ([]Peer, []Skip) {
	nodes = sortedByName(nodes)
	// First what each node claims on its own, then what it claims against the others: a node
	// already refused makes no claim that another must yield to.
	checked := make([]candidate, len(nodes))
	publishers := map[netip.AddrPort]int{}
	for i, n := range nodes {
		checked[i] = check(local, n, rules)
		if checked[i].skip == nil && checked[i].endpoint.IsValid() {
			publishers[checked[i].endpoint]++
		}
	}
	var peers []Peer
	var skipped []Skip
	keys := map[wgtypes.Key]string{}
	taken := overlap.New()
	for i, n := range nodes {
		c := checked[i]
		if c.skip != nil {
			skipped = append(skipped, *c.skip)
			continue
		}
		if count := publishers[c.endpoint]; c.endpoint.IsValid() && count > 1 {
			skipped = append(skipped, Skip{n.Name, ReasonDuplicateEndpoint, fmt.Sprintf("%d nodes publish the endpoint %s", count, c.endpoint)})
			continue
		}
		if other, ok := keys[c.key]; ok {
			skipped = append(skipped, Skip{n.Name, ReasonDuplicateKey, "public key already used by node " + other})
			continue
		}
		if overlap := overlapping(c.allowed, taken); overlap != "" {
			skipped = append(skipped, Skip{n.Name, ReasonOverlappingIP, overlap})
			continue
		}
		if rules.MaxPeers > 0 && len(peers) >= rules.MaxPeers {
			skipped = append(skipped, Skip{n.Name, ReasonPeerLimit, fmt.Sprintf("the remote has more nodes than its limit of %d peers: the first %d by name are peers", rules.MaxPeers, rules.MaxPeers)})
			continue
		}
		keys[c.key] = n.Name
		for _, p := range c.allowed {
			taken.Add(p, n.Name)
		}
		peers = append(peers, c.peer(n))
	}
	return peers, skipped
}

// peer is the peer a node that passed every rule becomes.
func (c candidate) peer(n Node) Peer {
	p := Peer{Node: n.Name, PublicKey: c.key, AllowedIPs: toIPNets(c.allowed), PublishedPathMTU: c.pathMTU}
	if c.endpoint.IsValid() {
		p.Endpoint = net.UDPAddrFromAddrPort(c.endpoint)
	}
	return p
}

// candidate is what a node that passed check claims: its key, endpoint (invalid when it
// publishes none), pod CIDRs and published path MTU; or, when it did not, why it is skipped.
type candidate struct {
	key      wgtypes.Key
	endpoint netip.AddrPort
	allowed  []netip.Prefix
	pathMTU  string
	skip     *Skip
}

// check holds a node to the rules that need no other node: its name, its key, its endpoint if
// it publishes one (one of its addresses or in rules.EndpointRanges) and its pod CIDRs
// (rules.Guard).
func check(local string, n Node, rules Rules) candidate {
	c := checkIdentity(local, n, rules)
	if c.skip != nil {
		return c
	}
	allowed, skip := checkPodCIDRs(n, rules)
	if skip != nil {
		return candidate{skip: skip}
	}
	c.allowed = allowed
	return c
}

// checkIdentity holds a node to the rules of what it publishes to be a peer: its name, its key
// and its endpoint if it publishes one (one of its addresses or in rules.EndpointRanges).
func checkIdentity(local string, n Node, rules Rules) candidate {
	skip := func(node, reason, detail string) candidate {
		return candidate{skip: &Skip{node, reason, detail}}
	}
	if skip := checkName(n.Name); skip != nil {
		return candidate{skip: skip}
	}
	keyText, hasKey := n.Annotations[PubKeyAnnotation(local)]
	endpointText, hasEndpoint := n.Annotations[EndpointAnnotation(local)]
	if !hasKey && !hasEndpoint {
		// Not (yet) running semaphore-wireguard for our cluster: not an error.
		return skip(n.Name, ReasonNotAnnotated, "no "+PubKeyAnnotation(local)+" and "+EndpointAnnotation(local))
	}
	key, err := wgtypes.ParseKey(keyText)
	if err == nil && key == (wgtypes.Key{}) {
		err = fmt.Errorf("the all-zero key")
	}
	if err != nil {
		return skip(n.Name, ReasonBadKey, fmt.Sprintf("%s=%q: %v", PubKeyAnnotation(local), keyText, err))
	}
	endpoint, refusal := checkEndpoint(local, n, rules, endpointText, hasEndpoint)
	if refusal != nil {
		return candidate{skip: refusal}
	}
	return candidate{key: key, endpoint: endpoint, pathMTU: n.Annotations[PathMTUAnnotation(local)]}
}

// checkName refuses a name that is not a DNS subdomain. The name is the remote's to choose: it
// is neither logged nor made a label as it is. A DNS subdomain is plain ASCII, so this also
// refuses any name that is not UTF-8.
func checkName(name string) *Skip {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return &Skip{fmt.Sprintf("%.64q", name), ReasonInvalidName, "the node's name is not a DNS subdomain: " + strings.Join(errs, "; ")}
	}
	return nil
}

// checkPodCIDRs holds a node's pod CIDRs to the rules: at least one, each well-formed, none
// overlapping another, each admitted by rules.Guard.
func checkPodCIDRs(n Node, rules Rules) ([]netip.Prefix, *Skip) {
	if len(n.PodCIDRs) == 0 {
		return nil, &Skip{n.Name, ReasonNoPodCIDR, "no pod CIDR: spec.podCIDRs is empty, or (calico-ipam) no IPAM block is affine to the node and it holds no borrowed address"}
	}
	allowed, bad := parsePodCIDRs(n.PodCIDRs)
	if bad != "" {
		return nil, &Skip{n.Name, ReasonBadPodCIDR, bad}
	}
	if refusal := refused(allowed, rules.Guard); refusal != nil {
		return nil, &Skip{n.Name, refusal.Reason, refusal.Detail}
	}
	return allowed, nil
}

// checkEndpoint reads the endpoint a node published, text, held to the rules: one of its own
// addresses or inside rules.EndpointRanges. A node that publishes none (published is false)
// cannot be reached and has the invalid AddrPort; one that publishes an empty or bad one is
// skipped.
func checkEndpoint(local string, n Node, rules Rules, text string, published bool) (netip.AddrPort, *Skip) {
	if !published {
		return netip.AddrPort{}, nil
	}
	endpoint, err := parseEndpoint(text)
	if err != nil {
		return netip.AddrPort{}, &Skip{n.Name, ReasonBadEndpoint, fmt.Sprintf("%s=%q: %v", EndpointAnnotation(local), text, err)}
	}
	if !ownAddress(endpoint.Addr(), n.Addresses) && !slices.ContainsFunc(rules.EndpointRanges, func(r netip.Prefix) bool { return r.Contains(endpoint.Addr()) }) {
		return netip.AddrPort{}, &Skip{n.Name, ReasonForeignEndpoint, fmt.Sprintf("%s=%q: %s is not one of the node's addresses %q, nor inside the remote's endpoint ranges %v",
			EndpointAnnotation(local), text, endpoint.Addr(), n.Addresses, rules.EndpointRanges)}
	}
	return endpoint, nil
}

// ownAddress reports whether a is one of addresses (IPv4-mapped IPv6 ones as IPv4).
func ownAddress(a netip.Addr, addresses []string) bool {
	for _, s := range addresses {
		if own, err := netip.ParseAddr(s); err == nil && own.Unmap() == a {
			return true
		}
	}
	return false
}

// parsePodCIDRs parses a node's pod CIDRs, masked, or says what is wrong with them: one is not
// a CIDR, or two overlap (WireGuard would keep only one of them).
func parsePodCIDRs(cidrs []string) ([]netip.Prefix, string) {
	allowed := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Sprintf("%q: %v", c, err)
		}
		allowed = append(allowed, p.Masked())
	}
	for i := range allowed {
		for j := i + 1; j < len(allowed); j++ {
			if allowed[i].Overlaps(allowed[j]) {
				return nil, fmt.Sprintf("pod CIDRs %s and %s overlap", allowed[i], allowed[j])
			}
		}
	}
	return allowed, ""
}

// refused returns the guard's refusal of the first of ps it refuses.
func refused(ps []netip.Prefix, guard addrguard.Remote) *addrguard.Refusal {
	for _, p := range ps {
		var r *addrguard.Refusal
		if errors.As(guard.Routed(p), &r) {
			return r
		}
	}
	return nil
}

func overlapping(ps []netip.Prefix, taken *overlap.Index) string {
	for _, p := range ps {
		if t, found := taken.Find(p, borrowed); found {
			return fmt.Sprintf("pod CIDR %s overlaps %s of node %s", p, t.Prefix, t.Holder)
		}
	}
	return ""
}

// borrowed reports whether one of two overlapping prefixes is a single address strictly inside
// the other.
func borrowed(a, b netip.Prefix) bool {
	return a.Bits() != b.Bits() && (a.IsSingleIP() || b.IsSingleIP())
}

// parseEndpoint accepts host:port with an IP address (IPv6 in brackets) and a port of
// 1-65535; an IPv4-mapped IPv6 address is returned as IPv4.
func parseEndpoint(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s) // a port is 0-65535
	if err != nil {
		return netip.AddrPort{}, err
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("port 0")
	}
	a := ap.Addr().Unmap()
	// Addresses nothing can be sent to, as a node might publish before it knows its own, and
	// those a remote must not make the local node send to (link-local, metadata services).
	if err := addrguard.Special(a); err != nil || a.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%s cannot be reached from another node", a)
	}
	return netip.AddrPortFrom(a, ap.Port()), nil
}

func toIPNets(ps []netip.Prefix) []net.IPNet {
	out := make([]net.IPNet, 0, len(ps))
	for _, p := range ps {
		out = append(out, net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out
}

// Routes are the pod CIDRs of all peers, which the device routes.
func Routes(peers []Peer) []net.IPNet {
	var out []net.IPNet
	for _, p := range peers {
		out = append(out, p.AllowedIPs...)
	}
	return out
}
