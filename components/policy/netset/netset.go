// Package netset computes, without any I/O, the network sets that stand for labelled remote
// pods: their names, labels and nets.
package netset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Label keys on every set, naming the pods it stands for. NetworkPolicies select on them.
const (
	LabelCluster   = "policy.semaphore.uw.io/cluster"
	LabelNamespace = "policy.semaphore.uw.io/namespace"
	LabelName      = "policy.semaphore.uw.io/name"
)

// OriginalManagedBy is the label the original semaphore-policy put on its sets, with the value
// labels.Policy. Our sets carry it too, so that selectors written for the original keep
// matching; it never decides ownership (labels.ManagedBy does).
const OriginalManagedBy = "managed-by"

// ReasonHostNetwork is the refusal reason (metric label) of an address of a pod that runs in its
// node's network namespace (spec.hostNetwork): the address is the node's, shared by the kubelet
// and every other host-network pod there, so a set holding it would let all of them in.
const ReasonHostNetwork = "host_network"

// Source identifies a set: the pods of one remote cluster and namespace whose policy label has
// one value.
type Source = ownership.Source

// sourceKeys are the labels under which a set records its source.
var sourceKeys = ownership.SourceKeys{Component: ownership.Policy, Cluster: LabelCluster, Namespace: LabelNamespace, Name: LabelName}

// Labels are the labels of the set of s.
func Labels(s Source) map[string]string {
	l := sourceKeys.Labels(s)
	l[OriginalManagedBy] = ownership.Policy
	return l
}

// MadeByOriginal reports whether a set's labels are those the original semaphore-policy gave
// its sets, and not ours: what adoption takes over. The original named its sets as we do.
func MadeByOriginal(l map[string]string) (Source, bool) {
	src, ok := SourceOf(l)
	return src, ok && l[OriginalManagedBy] == ownership.Policy && l[ownership.ManagedBy] == ""
}

// SourceOf reads the source labels of a set.
func SourceOf(l map[string]string) (Source, bool) { return sourceKeys.SourceOf(l) }

var (
	notInName = regexp.MustCompile(`[^a-z0-9.-]`)
	// dotRun is a run of dashes and dots holding a dot: in a DNS subdomain every dot-separated
	// part starts and ends with a letter or digit, so such a run becomes one dot.
	dotRun = regexp.MustCompile(`[-.]*\.[-.]*`)
)

// SetName is the name of the set of s: <cluster>-<namespace>-<name>. Cluster and namespace are
// DNS labels already; a label value may also hold upper case, underscores and dots in places
// object names may not: such a name is lower-cased, other characters become dashes, runs of
// dashes and dots around a dot become that dot, and a short hash of the original keeps it
// distinct from the name of another value that maps alike.
func SetName(s Source) string {
	raw := s.Cluster + "-" + s.Namespace + "-" + s.Name
	clean := notInName.ReplaceAllString(strings.ToLower(raw), "-")
	clean = dotRun.ReplaceAllString(clean, ".")
	if clean == raw {
		return raw
	}
	sum := sha256.Sum256([]byte(raw))
	return strings.Trim(clean, "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// Included reports whether a pod contributes to its set: it has an address and has not
// finished (a Succeeded or Failed pod's address may already belong to another pod).
func Included(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	return p.Status.PodIP != "" || len(p.Status.PodIPs) > 0
}

// Nets returns the host networks (/32 for IPv4, /128 for IPv6) of the addresses of the
// included pods, without duplicates, sorted by address (IPv4 first), the addresses that did not
// parse, and those refused, which local policies must not come to trust: every address of a
// host-network pod (ReasonHostNetwork, whatever its labels), and those guard refused (a remote
// may publish only addresses inside its ranges, never the local cluster's or special ones).
func Nets(pods []*corev1.Pod, guard addrguard.Remote) (nets []string, bad []string, refused []addrguard.Refused) {
	seen := map[netip.Addr]bool{}
	var addrs []netip.Addr
	for _, p := range pods {
		if !Included(p) {
			continue
		}
		ips := []string{p.Status.PodIP}
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		for _, ip := range ips {
			if ip == "" {
				continue
			}
			a, err := netip.ParseAddr(ip)
			if err != nil {
				// PodIP repeats PodIPs[0]: report each bad address once.
				if !slices.Contains(bad, ip) {
					bad = append(bad, ip)
				}
				continue
			}
			a = a.Unmap().WithZone("")
			if p.Spec.HostNetwork {
				refused = append(refused, addrguard.Refused{Source: p.Namespace + "/" + p.Name, Addr: a.String(), Reason: ReasonHostNetwork})
				continue
			}
			var r *addrguard.Refusal
			if errors.As(guard.Addr(a), &r) {
				refused = append(refused, addrguard.Refused{Source: p.Namespace + "/" + p.Name, Addr: a.String(), Reason: r.Reason})
				continue
			}
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	nets = make([]string, 0, len(addrs))
	for _, a := range addrs {
		nets = append(nets, netip.PrefixFrom(a, a.BitLen()).String())
	}
	return nets, bad, slices.Compact(refused)
}
