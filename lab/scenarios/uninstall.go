package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// uninstalled is the cluster the uninstall scenario uninstalls; consumer reads it.
const (
	uninstalled = "aws"
	consumer    = "merit"
)

// checkUninstall uninstalls Semaphore from aws as docs/charts.md tells users (helm uninstall of
// the umbrella, whose hooks have every component remove what it made, and of semaphore-remote)
// and expects nothing of it left in aws or on aws's nodes, and the token merit read aws with
// refused; then it installs and links every cluster again by the getting-started guide and
// expects the whole mesh ready again. It runs last: it also mends what the plugin's check
// broke (gcp's revoked token in aws).
func checkUninstall(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintf(l.Out(), "uninstall (%s: helm uninstall of both releases, then every cluster installed again)\n", uninstalled)
	if !l.NodesRun() {
		fmt.Fprintln(l.Out(), "  skipped: no nodes, so no controllers run")
		return nil
	}
	token, err := l.ConsumerToken(ctx, consumer, uninstalled)
	if err != nil {
		return []string{fmt.Sprintf("reading the token %s reads %s with: %v", consumer, uninstalled, err)}
	}
	if ok, err := l.TokenAccepted(ctx, uninstalled, token); !ok {
		return []string{fmt.Sprintf("%s's token for %s refused before the uninstall: %v", consumer, uninstalled, err)}
	}
	start := time.Now()
	if err := l.UninstallCluster(ctx, uninstalled); err != nil {
		return []string{fmt.Sprintf("uninstalling %s: %v", uninstalled, err)}
	}
	fmt.Fprintf(l.Out(), "  %-6s uninstalled in %s\n", uninstalled, time.Since(start).Round(100*time.Millisecond))
	if problems := expectNothingLeft(ctx, l); len(problems) > 0 {
		return problems
	}
	if problems := expectTokenRefused(ctx, l, token); len(problems) > 0 {
		return problems
	}
	start = time.Now()
	if err := l.InstallAgain(ctx); err != nil {
		return []string{fmt.Sprintf("installing again: %v", err)}
	}
	// Every controller pod of aws is new, and gcp's were replaced by the plugin's scenario.
	if problems := settle(ctx, l, "after installing again"); len(problems) > 0 {
		return problems
	}
	fmt.Fprintf(l.Out(), "  every cluster installed and linked again, the mesh ready, in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// expectNothingLeft waits up to a minute (pods terminating, the hooks' Jobs being collected)
// for nothing of Semaphore to be left in the uninstalled cluster and on its nodes.
func expectNothingLeft(ctx context.Context, l *env.Lab) []string {
	var left []string
	start := time.Now()
	for deadline := start.Add(time.Minute); ; time.Sleep(2 * time.Second) {
		var err error
		if left, err = l.Leftovers(ctx, uninstalled); err != nil {
			return []string{fmt.Sprintf("looking for what is left in %s: %v", uninstalled, err)}
		}
		if len(left) == 0 {
			fmt.Fprintf(l.Out(), "  %-6s nothing left %s after the uninstall: no object of a component, nothing in %s or %s, no device, route, key or annotation of ours on its nodes\n",
				uninstalled, time.Since(start).Round(100*time.Millisecond), layout.SemaphoreNamespace, layout.RemoteNamespace)
			return nil
		}
		if time.Now().After(deadline) {
			return []string{fmt.Sprintf("left in %s after the uninstall: %s", uninstalled, strings.Join(left, "; "))}
		}
	}
}

// expectTokenRefused waits up to 30 seconds for the uninstalled cluster to refuse the token
// its consumer read it with.
func expectTokenRefused(ctx context.Context, l *env.Lab, token string) []string {
	start := time.Now()
	for deadline := start.Add(30 * time.Second); ; time.Sleep(time.Second) {
		ok, err := l.TokenAccepted(ctx, uninstalled, token)
		if err == nil && !ok {
			fmt.Fprintf(l.Out(), "  %-6s refuses the token %s read it with (%s later)\n", uninstalled, consumer, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			return []string{fmt.Sprintf("%s still accepts %s's token after semaphore-remote's uninstall (err %v)", uninstalled, consumer, err)}
		}
	}
}
