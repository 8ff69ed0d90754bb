package mesh

import (
	"cmp"
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// probe asks each remote, from this machine and with each component's credentials (read from the
// Secrets its pods mount), who they are: an answer means the API server is reachable and accepts
// them. The requests run in parallel, so that unreachable remotes cost one timeout rather than one
// per component.
func (st *ClusterState) probe(ctx context.Context, s Sources, components map[string]release.Component, remote func(string) *RemoteState) {
	timeout := cmp.Or(s.Timeout, 5*time.Second)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range components {
		creds, errs := c.Remotes(ctx, s.Client, s.Credentials)
		for _, err := range errs {
			st.problem("%s: %v", c.Name, err)
		}
		for _, r := range creds {
			wg.Go(func() {
				a := Access{Component: c.Name}
				a.User, a.Reachable, a.Error = whoAmI(ctx, r.Config, timeout)
				mu.Lock()
				defer mu.Unlock()
				rs := remote(r.Name)
				rs.Access = append(rs.Access, a)
			})
		}
	}
	wg.Wait()
}

func whoAmI(ctx context.Context, cfg *rest.Config, timeout time.Duration) (user string, ok bool, msg string) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", false, err.Error()
	}
	user, err = remote.WhoAmI(ctx, client, cfg.Host)
	if err != nil {
		return "", false, err.Error()
	}
	return user, true, ""
}
