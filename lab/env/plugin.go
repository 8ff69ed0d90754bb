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

// The kubectl plugin (kubectl-semaphore), as the lab runs it for its checks (the guide links
// the clusters with it, charts.go). With nodes it runs as on a workstation on the internet:
// inside the lab's internet namespace, with the API servers at their published addresses.

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
	path := l.Path(workstationKubeconfig)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*kc, path)
}

// workstationKubeconfig (in the lab directory) is WorkstationKubeconfig's file.
const workstationKubeconfig = "kubeconfig-internet"
