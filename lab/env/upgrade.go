package env

import (
	"context"
	"os"

	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/release"
)

// ThisRelease is the lab's own release.
func (l *Lab) ThisRelease(ctx context.Context) (release.Release, error) {
	return l.labRelease.Pushed(ctx)
}

// BuildPreviousRelease builds release.PreviousRelease from its commit and pushes it to the
// lab's registry (release.Builder.BuildPrevious).
func (l *Lab) BuildPreviousRelease(ctx context.Context) (release.Release, error) {
	return l.labRelease.BuildPrevious(ctx)
}

// UpgradeUmbrellaTo upgrades cluster's umbrella release to rel's chart and images with the
// values the user gave it, as a user upgrades (`helm get values` into a file, `helm upgrade
// -f` it; --reuse-values would carry this chart's defaults into the other's schema), each
// component's image digest set to rel's, and waits for the rollout.
func (l *Lab) UpgradeUmbrellaTo(ctx context.Context, cluster string, rel release.Release) error {
	target := []string{"--kubeconfig", l.Path(layout.KubeconfigFile), "--kube-context", cluster, "-n", layout.SemaphoreNamespace}
	values, err := l.helm(ctx, append([]string{"get", "values", layout.UmbrellaRelease, "-o", "yaml"}, target...)...)
	if err != nil {
		return err
	}
	file := l.Path("tmp", "values-"+cluster+".yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		return err
	}
	args := append([]string{"upgrade", layout.UmbrellaRelease, "oci://" + l.registry + "/" + layout.ChartsRepo + "/" + layout.UmbrellaRelease,
		"--version", dist.ChartVersion(rel.Version), "--plain-http", "-f", file, "--wait", "--timeout", "5m"}, target...)
	args = append(args, rel.DigestSets()...)
	_, err = l.helm(ctx, args...)
	return err
}
