package check

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// checkPodRanges says, for each remote the component reads, which ranges the remote's addresses
// must lie in, and warns of a remote with none (the charts' allowAnyPodAddress, or a binary
// configured without): addrguard then holds its addresses only to the special, local and width
// rules, so it may publish any other address. A value that does not parse fails: the component
// does not start with it.
func checkPodRanges(c release.Component) []Result {
	res := func(remote string) Result {
		return Result{Check: PodRanges, Cluster: c.LocalCluster(), Remote: remote, Component: c.Name}
	}
	ranges, err := c.PodRanges()
	if err != nil {
		return []Result{fail(res(""), "check-pod-ranges", "%s: %v: the component does not start with it; fix the podRanges of the semaphore release's global.remotes",
			c.WorkloadRef(), err)}
	}
	var out []Result
	for _, name := range c.RemoteNames() {
		if rs := ranges[name]; len(rs) > 0 {
			out = append(out, pass(res(name), "the addresses remote %s publishes must lie in %s (%s)", name, joinPrefixes(rs), release.PodRangesEnv))
			continue
		}
		out = append(out, warn(res(name), "remote %s has no pod ranges (no %s:CIDR pair in %s): its addresses are held only to the special, local and width rules (and kept out of the other remotes' ranges), so any other address it publishes is accepted; give its global.remotes entry podRanges (kubectl semaphore link proposes them) unless it opts out on purpose (allowAnyPodAddress)",
			name, name, release.PodRangesEnv))
	}
	return out
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// labelledRange is a pod range and whose it is, for messages.
type labelledRange struct {
	prefix netip.Prefix
	of     string
}

// checkRangesApart checks that no pod range of a remote overlaps the local cluster's pod ranges
// (its Nodes' pod CIDRs and, where Calico runs, its enabled IP pools) or another remote's: an
// address can be routed to one place only. The remotes' ranges are those the components are
// configured with (SEMAPHORE_REMOTE_POD_RANGES).
func (k *checker) checkRangesApart(ctx context.Context, res Result, ranges addrguard.Ranges, pools []ipPool) Result {
	local, err := k.localRanges(ctx, pools)
	if err != nil {
		return fail(res, "check-pod-ranges", "listing this cluster's Nodes for their pod CIDRs: %v", err)
	}
	var remote []labelledRange
	for _, name := range slices.Sorted(maps.Keys(ranges)) {
		for _, p := range ranges[name] {
			remote = append(remote, labelledRange{p, "remote " + name})
		}
	}
	if len(remote) == 0 {
		return pass(res, "no remote has pod ranges to compare with this cluster's %d", len(local))
	}
	var overlaps []string
	for i, r := range remote {
		for _, l := range local {
			if r.prefix.Overlaps(l.prefix) {
				overlaps = append(overlaps, fmt.Sprintf("%s %s overlaps %s %s", r.of, r.prefix, l.of, l.prefix))
			}
		}
		for _, o := range remote[i+1:] {
			if o.of != r.of && r.prefix.Overlaps(o.prefix) {
				overlaps = append(overlaps, fmt.Sprintf("%s %s overlaps %s %s", r.of, r.prefix, o.of, o.prefix))
			}
		}
	}
	if len(overlaps) > 0 {
		return fail(res, "check-pod-ranges", "pod ranges overlap: %s; an address can be routed to one cluster only: renumber, or narrow the podRanges of the global.remotes entries", most(overlaps, 5))
	}
	return pass(res, "the %d pod ranges of the remotes overlap neither each other nor this cluster's %d (Nodes' pod CIDRs, enabled IP pools)", len(remote), len(local))
}

// localRanges are the local cluster's pod ranges: its Nodes' pod CIDRs and its enabled IP pools.
func (k *checker) localRanges(ctx context.Context, pools []ipPool) ([]labelledRange, error) {
	nodes, err := k.localNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []labelledRange
	for _, n := range nodes {
		for _, cidr := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(cidr); err == nil {
				out = append(out, labelledRange{p.Masked(), "node " + n.Name + "'s pod CIDR"})
			}
		}
	}
	for _, p := range pools {
		if !p.disabled && p.badField == "" {
			out = append(out, labelledRange{p.cidr, "this cluster's IPPool " + p.name})
		}
	}
	return out, nil
}

// remoteRanges are the pod ranges of each remote, as the components are configured (a value
// that does not parse is the pod-ranges check's failure), and every remote they read, sorted.
func remoteRanges(components []release.Component) (addrguard.Ranges, []string) {
	out := addrguard.Ranges{}
	var remotes []string
	for _, c := range components {
		for _, name := range c.RemoteNames() {
			if !slices.Contains(remotes, name) {
				remotes = append(remotes, name)
			}
		}
		ranges, _ := c.PodRanges()
		for name, ps := range ranges {
			for _, p := range ps {
				if !slices.Contains(out[name], p) {
					out[name] = append(out[name], p)
				}
			}
		}
	}
	slices.Sort(remotes)
	return out, remotes
}
