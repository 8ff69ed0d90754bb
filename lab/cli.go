package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// pluginResult is one line of `kubectl semaphore check -o json`.
type pluginResult struct {
	Check     string `json:"check"`
	Cluster   string `json:"cluster"`
	Remote    string `json:"remote"`
	Component string `json:"component"`
	OK        bool   `json:"ok"`
	Warning   bool   `json:"warning"`
	Message   string `json:"message"`
}

// checkWithPlugin runs `kubectl semaphore check` in every cluster, as a user would, and expects
// it to pass; then it revokes gcp's token in aws and expects the check in gcp to fail, naming
// aws and no other remote, and gcp's controllers to roll out during that outage
// (checkRolloutDuringOutage). It runs last: gcp no longer reads aws afterwards.
//
// The plugin runs inside the underlay's network namespace: the remotes' addresses in the
// controllers' Secrets are the API servers' underlay addresses, which only the nodes reach. It
// runs every check, the agents' peers and handshakes too: it reads their metrics through the
// API server's pod proxy, which reaches the pods through the lab's egress proxy (egress.go).
func (l *lab) checkWithPlugin(ctx context.Context) []string {
	fmt.Fprintln(l.out, "kubectl semaphore check (in every cluster, from the underlay; then gcp's token in aws revoked)")
	if !l.withNodes {
		fmt.Fprintln(l.out, "  skipped: no nodes, so no controllers run")
		return nil
	}
	kubeconfig, err := l.underlayKubeconfig()
	if err != nil {
		return []string{fmt.Sprintf("kubeconfig for the underlay: %v", err)}
	}
	var problems []string
	for _, cluster := range clusterNames() {
		results, code, err := l.runCheck(ctx, kubeconfig, cluster)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: %v", cluster, err))
		case code != 0 || len(failedChecks(results)) > 0:
			problems = append(problems, fmt.Sprintf("kubectl semaphore --context %s check: exit status %d, failures: %s", cluster, code, strings.Join(failedChecks(results), "; ")))
		default:
			fmt.Fprintf(l.out, "  %-6s %d checks passed\n", cluster, len(results))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	if problems := l.checkRevokedToken(ctx, kubeconfig); len(problems) > 0 {
		return problems
	}
	return l.checkRolloutDuringOutage(ctx)
}

// runCheck runs `kubectl semaphore check -o json` for cluster inside the underlay and returns
// its results and exit status.
func (l *lab) runCheck(ctx context.Context, kubeconfig, cluster string) ([]pluginResult, int, error) {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", underlayNetns, l.bin.plugin,
		"--kubeconfig", kubeconfig, "--context", cluster, "check", "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code, err = exit.ExitCode(), nil
	}
	if err != nil {
		return nil, code, err
	}
	var results []pluginResult
	if err := json.Unmarshal(out, &results); err != nil {
		return nil, code, fmt.Errorf("exit status %d, output not JSON (%w): %s%s", code, err, out, stderr.String())
	}
	return results, code, nil
}

// failedChecks are the failed results, one line each.
func failedChecks(results []pluginResult) []string {
	var out []string
	for _, r := range results {
		if !r.OK {
			out = append(out, fmt.Sprintf("%s %s<-%s %s: %s", r.Check, r.Cluster, r.Remote, r.Component, r.Message))
		}
	}
	return out
}

// checkRevokedToken revokes gcp's token in aws (deletes the consumer's token Secret there,
// which invalidates the token) and expects the check in gcp to fail, naming aws and no other
// remote, within 30 seconds.
func (l *lab) checkRevokedToken(ctx context.Context, kubeconfig string) []string {
	secret := "semaphore-remote-gcp-token"
	if err := l.clusters["aws"].Client.CoreV1().Secrets(remoteNamespace).Delete(ctx, secret, metav1.DeleteOptions{}); err != nil {
		return []string{fmt.Sprintf("revoking gcp's token in aws (deleting Secret %s/%s): %v", remoteNamespace, secret, err)}
	}
	start := time.Now()
	var last string
	for time.Since(start) < 30*time.Second {
		results, code, err := l.runCheck(ctx, kubeconfig, "gcp")
		if err != nil {
			return []string{fmt.Sprintf("kubectl semaphore --context gcp check after revoking: %v", err)}
		}
		if aws, only := failureOf(results, "aws"); code == 1 && aws != "" && only {
			fmt.Fprintf(l.out, "  gcp    fails %s after gcp's token was revoked in aws: %s\n", time.Since(start).Round(100*time.Millisecond), aws)
			return nil
		}
		last = fmt.Sprintf("exit status %d, failures %v", code, failedChecks(results))
		time.Sleep(time.Second)
	}
	return []string{fmt.Sprintf("kubectl semaphore --context gcp check after gcp's token was revoked in aws: want exit status 1 and failures naming only aws, got %s", last)}
}

// failureOf is the first failure naming remote, and whether no other remote failed.
func failureOf(results []pluginResult, remote string) (first string, only bool) {
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

// underlayKubeconfig writes the lab's kubeconfig with every cluster's API server at its
// underlay address (the same certificate names it) and returns its path.
func (l *lab) underlayKubeconfig() (string, error) {
	kc, err := clientcmd.LoadFromFile(l.path(kubeconfigFile))
	if err != nil {
		return "", err
	}
	for _, name := range clusterNames() {
		c, ok := kc.Clusters[name]
		if !ok {
			return "", fmt.Errorf("no cluster %s in %s", name, l.path(kubeconfigFile))
		}
		c.Server = l.apiServerOnUnderlay(name)
	}
	path := l.path("kubeconfig-underlay")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*kc, path)
}
