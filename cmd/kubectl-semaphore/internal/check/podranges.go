package check

import (
	"net/netip"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
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
		return []Result{fail(res(""), "check-pods", "%s: %v: the component does not start with it; fix the podRanges of the semaphore release's global.remotes",
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
