package env

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/release"

	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The lab installs the charts the way the getting-started guide tells users to: packaged,
// pushed to an OCI registry (the lab's, on loopback) and installed from there with the helm CLI
// (charts.go). Its own Helm directories keep a user's Helm configuration out of it.

// helm runs the helm CLI with args and returns its standard output; its standard error goes
// to logs/helm.log, and into the error when it fails.
func (l *Lab) helm(ctx context.Context, args ...string) (string, error) {
	home := l.Path("tmp", "helm")
	cmd := exec.CommandContext(ctx, l.bin.helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	l.appendLog("helm.log", "helm "+strings.Join(args, " "), stdout.String()+stderr.String())
	if err != nil {
		return "", fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// appendLog appends to logs/<name> the command line command and what it printed.
func (l *Lab) appendLog(name, command, output string) {
	if f, err := os.OpenFile(l.Path("logs", name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "$ %s\n%s", command, output)
		f.Close()
	}
}

// release is what release name in namespace of cluster rendered, with its NOTES, as the helm
// CLI tells.
func (l *Lab) release(ctx context.Context, cluster, name, namespace string) (*helmchart.Manifest, error) {
	target := []string{"--kubeconfig", l.Path(layout.KubeconfigFile), "--kube-context", cluster, "-n", namespace}
	manifest, err := l.helm(ctx, append([]string{"get", "manifest", name}, target...)...)
	if err != nil {
		return nil, err
	}
	notes, err := l.helm(ctx, append([]string{"get", "notes", name}, target...)...)
	if err != nil {
		return nil, err
	}
	// `helm get notes` heads the text with "NOTES:".
	notes = strings.TrimPrefix(notes, "NOTES:\n")
	return helmchart.Parse(&release.Release{Name: name, Namespace: namespace, Manifest: manifest, Info: &release.Info{Notes: notes}})
}

// UpgradeUmbrella upgrades cluster's umbrella release to the same chart with its values and
// sets (helm --reuse-values --set), as a user changes one value.
func (l *Lab) UpgradeUmbrella(ctx context.Context, cluster string, sets ...string) error {
	args := []string{"upgrade", layout.UmbrellaRelease, "oci://" + l.registry + "/" + layout.ChartsRepo + "/" + layout.UmbrellaRelease,
		"--version", dist.ChartVersion(l.labRelease.Version), "--plain-http", "--reuse-values",
		"--kubeconfig", l.Path(layout.KubeconfigFile), "--kube-context", cluster, "-n", layout.SemaphoreNamespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	_, err := l.helm(ctx, args...)
	return err
}

// RollbackUmbrella rolls cluster's umbrella release back to its previous revision.
func (l *Lab) RollbackUmbrella(ctx context.Context, cluster string) error {
	_, err := l.helm(ctx, "rollback", layout.UmbrellaRelease, "--kubeconfig", l.Path(layout.KubeconfigFile), "--kube-context", cluster, "-n", layout.SemaphoreNamespace)
	return err
}
