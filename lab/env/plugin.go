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

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The kubectl plugin (kubectl-semaphore), as the lab runs it for its checks (the guide links
// the clusters with it, charts.go, as from a workstation on the lab's internet).

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

// PluginCheck runs `kubectl semaphore check -o json` for cluster from this machine's shell,
// with the lab's kubeconfig (the API servers on loopback), and returns its results and exit
// status. The check judges from where the controllers run, through the API servers, and dials
// no address it reads from the clusters: nothing it does leaves this machine. With
// probeRemotes it also reads the remotes themselves (--probe-remotes), at the addresses the
// clusters' Secrets give, so it runs as from a workstation on the lab's internet, where those
// are.
func (l *Lab) PluginCheck(ctx context.Context, cluster string, probeRemotes bool) ([]PluginResult, int, error) {
	cmd := exec.CommandContext(ctx, l.bin.plugin, "--kubeconfig", l.Path(layout.KubeconfigFile), "--context", cluster, "check", "-o", "json")
	if probeRemotes {
		kubeconfig, err := l.WorkstationKubeconfig()
		if err != nil {
			return nil, 0, err
		}
		cmd = exec.CommandContext(ctx, "ip", "netns", "exec", layout.InternetNetns, l.bin.plugin,
			"--kubeconfig", kubeconfig, "--context", cluster, "check", "--probe-remotes", "-o", "json")
	}
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
	kc, err := clientcmd.LoadFromFile(l.Path(layout.KubeconfigFile))
	if err != nil {
		return "", err
	}
	for _, name := range layout.ClusterNames() {
		c, ok := kc.Clusters[name]
		if !ok {
			return "", fmt.Errorf("no cluster %s in %s", name, l.Path(layout.KubeconfigFile))
		}
		c.Server = l.PublicAPIServer(name)
	}
	path := l.Path(workstationKubeconfig)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*kc, path)
}

// workstationKubeconfig (in the lab directory) is WorkstationKubeconfig's file.
const workstationKubeconfig = "kubeconfig-internet"
