package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// checkWithPlugin runs `kubectl semaphore check` in every cluster, as a user would, and expects
// it to pass; then it revokes gcp's token in aws and expects the check in gcp to fail, naming
// aws and no other remote, and gcp's controllers to roll out during that outage
// (checkRolloutDuringOutage). gcp no longer reads aws afterwards, until the uninstall scenario,
// which runs next, installs and links every cluster again.
//
// The plugin runs from this machine's shell with the lab's kubeconfig, as a user's workstation
// outside the clusters' networks: it judges every check from where the controllers run (their
// metrics, read through the API server's pod proxy, which reaches the pods through the lab's
// egress proxies, lab/cmd/egress) and dials none of the remotes' addresses it reads.
func checkWithPlugin(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintln(l.Out(), "kubectl semaphore check (in every cluster, from this machine's shell; then gcp's token in aws revoked)")
	if !l.NodesRun() {
		fmt.Fprintln(l.Out(), "  skipped: no nodes, so no controllers run")
		return nil
	}
	var problems []string
	for _, cluster := range layout.ClusterNames() {
		results, code, err := l.PluginCheck(ctx, cluster, false)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: %v", cluster, err))
		case code != 0 || len(env.FailedChecks(results)) > 0:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: exit status %d, failures: %s", cluster, code, strings.Join(env.FailedChecks(results), "; ")))
		default:
			fmt.Fprintf(l.Out(), "  %-6s %d checks passed\n", cluster, len(results))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	if problems := checkRevokedToken(ctx, l); len(problems) > 0 {
		return problems
	}
	return checkRolloutDuringOutage(ctx, l)
}

// checkRevokedToken revokes gcp's token in aws (deletes the consumer's token Secret there,
// which invalidates the token) and expects the check in gcp to fail, naming aws and no other
// remote, within 30 seconds.
func checkRevokedToken(ctx context.Context, l *env.Lab) []string {
	secret := "semaphore-remote-gcp-token"
	if err := l.Cluster("aws").Client.CoreV1().Secrets(layout.RemoteNamespace).Delete(ctx, secret, metav1.DeleteOptions{}); err != nil {
		return []string{fmt.Sprintf("revoking gcp's token in aws (deleting Secret %s/%s): %v", layout.RemoteNamespace, secret, err)}
	}
	start := time.Now()
	var last string
	for time.Since(start) < 30*time.Second {
		results, code, err := l.PluginCheck(ctx, "gcp", false)
		if err != nil {
			return []string{fmt.Sprintf("kubectl semaphore --context gcp check after revoking: %v", err)}
		}
		if aws, only := failureOf(results, "aws"); code == 1 && aws != "" && only {
			fmt.Fprintf(l.Out(), "  gcp    fails %s after gcp's token was revoked in aws: %s\n", time.Since(start).Round(100*time.Millisecond), aws)
			return nil
		}
		last = fmt.Sprintf("exit status %d, failures %v", code, env.FailedChecks(results))
		time.Sleep(time.Second)
	}
	return []string{fmt.Sprintf("kubectl semaphore --context gcp check after gcp's token was revoked in aws: want exit status 1 and failures naming only aws, got %s", last)}
}

// failureOf is the first failure naming remote, and whether no other remote failed.
func failureOf(results []env.PluginResult, remote string) (first string, only bool) {
	only = true
	for _, r := range results {
		switch {
		case r.OK:
		case r.Remote == remote && first == "":
			first = fmt.Sprintf("%s %s: %s", r.Check, r.Component, r.Message)
		case r.Remote != remote && r.Remote != "":
			only = false
		}
	}
	return first, only
}
