package check

import (
	"context"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// preflight are the checks of what the local cluster must provide besides the components: the
// CoreDNS rewrite of every remote the service mirror reads, Calico's IP pools for the remotes'
// pod ranges, and pod ranges that do not overlap. They read the local cluster only.
func (k *checker) preflight(ctx context.Context, components []release.Component) []Result {
	cluster := components[0].LocalCluster()
	res := func(check string) func(remote string) Result {
		return func(remote string) Result { return Result{Check: check, Cluster: cluster, Remote: remote} }
	}
	var out []Result
	for _, c := range components {
		if c.Name == release.ServiceMirror {
			out = append(out, k.checkDNS(ctx, c)...)
		}
	}
	ranges, remotes := remoteRanges(components)
	pools, calico, err := k.ipPools(ctx)
	out = append(out, checkIPPools(res(IPPools), remotes, ranges, pools, calico, err)...)
	return append(out, k.checkRangesApart(ctx, res(PodRanges)(""), ranges, pools))
}
