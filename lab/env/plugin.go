package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// The kubectl plugin (kubectl-semaphore), as the lab runs it: to link the clusters, as a user
// does, and for its checks. With nodes it runs as on a workstation on the internet: inside the
// lab's internet namespace, with the API servers at their published addresses, which it hands
// out and reads.

// link runs `kubectl semaphore link` from remote to consumer, the global.remotes entry going to
// the values file values. It waits for the token controller to fill the token, as a script
// would. With nodes it runs on the lab's internet, so its check that the remote takes the token
// from there runs too; without nodes there is no internet, and the check is skipped.
func (l *Lab) link(ctx context.Context, remote, consumer, values string) error {
	kubeconfig, skip := l.Path(KubeconfigFile), []string{"--skip-reachability-check"}
	if l.withNodes {
		var err error
		if kubeconfig, err = l.WorkstationKubeconfig(); err != nil {
			return fmt.Errorf("kubeconfig for the internet: %w", err)
		}
		skip = nil
	}
	args := append([]string{"--kubeconfig", kubeconfig, "link",
		"--from", remote, "--remote-name", remote, "--to", consumer, "--to-cluster", consumer, "-n", SemaphoreNamespace,
		"--values-out", values, "--wait", "1m"}, skip...)
	cmd := exec.CommandContext(ctx, l.bin.plugin, args...)
	if l.withNodes {
		cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", InternetNetns, l.bin.plugin}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	l.appendLog("kubectl-semaphore.log", "kubectl-semaphore "+strings.Join(args, " "), string(out))
	if err != nil {
		return fmt.Errorf("kubectl semaphore link --from %s --to %s: %w: %s", remote, consumer, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// PluginResult is one line of `kubectl semaphore check -o json`.
type PluginResult struct {
	Check     string `json:"check"`
	Cluster   string `json:"cluster"`
	Remote    string `json:"remote"`
	Component string `json:"component"`
	OK        bool   `json:"ok"`
	Warning   bool   `json:"warning"`
	Message   string `json:"message"`
}

// PluginCheck runs `kubectl semaphore check -o json` for cluster on the lab's internet, with
// kubeconfig (WorkstationKubeconfig), and returns its results and exit status.
func (l *Lab) PluginCheck(ctx context.Context, kubeconfig, cluster string) ([]PluginResult, int, error) {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", InternetNetns, l.bin.plugin,
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
	var results []PluginResult
	if err := json.Unmarshal(out, &results); err != nil {
		return nil, code, fmt.Errorf("exit status %d, output not JSON (%w): %s%s", code, err, out, stderr.String())
	}
	return results, code, nil
}

// FailedChecks are the failed results, one line each.
func FailedChecks(results []PluginResult) []string {
	var out []string
	for _, r := range results {
		if !r.OK {
			out = append(out, fmt.Sprintf("%s %s<-%s %s: %s", r.Check, r.Cluster, r.Remote, r.Component, r.Message))
		}
	}
	return out
}

// WorkstationKubeconfig writes the lab's kubeconfig with every cluster's API server at its
// published address (the same certificate names it), as a workstation on the internet reaches
// them, and returns its path.
func (l *Lab) WorkstationKubeconfig() (string, error) {
	kc, err := clientcmd.LoadFromFile(l.Path(KubeconfigFile))
	if err != nil {
		return "", err
	}
	for _, name := range ClusterNames() {
		c, ok := kc.Clusters[name]
		if !ok {
			return "", fmt.Errorf("no cluster %s in %s", name, l.Path(KubeconfigFile))
		}
		c.Server = l.PublicAPIServer(name)
	}
	path := l.Path("kubeconfig-internet")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*kc, path)
}
