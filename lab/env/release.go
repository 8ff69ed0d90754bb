package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/dist"
	"github.com/kube-semaphore/semaphore/internal/images"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// The lab runs a release as users get one, built by the code `make release` runs (internal/dist)
// with a version of its own (v0.0.0-lab.g<commit>): the images tagged with it, both charts
// packaged with it and installed from the registry by that version, and kubectl-semaphore
// installed by krew from the release's archive for this machine, checked against the release's
// krew manifest and SHA256SUMS.

// releaseDir is where, in the lab directory, the lab's release goes.
const releaseDir = "release"

// labVersion sets the lab's release version, from the tree it is built from.
func (l *Lab) labVersion(ctx context.Context) error {
	v, err := dist.SnapshotVersion(ctx, testbed.RepoRoot(), "lab")
	if err != nil {
		return err
	}
	l.version = v
	return nil
}

// installPlugin builds the release's kubectl-semaphore archive for this machine, writes its
// SHA256SUMS and krew manifest, and installs it with `krew install --manifest --archive` into
// the lab's krew root; it returns the installed plugin.
func (l *Lab) installPlugin(ctx context.Context) (string, error) {
	dir := l.Path(releaseDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root := testbed.RepoRoot()
	epoch, err := images.SourceDateEpoch(ctx, root)
	if err != nil {
		return "", err
	}
	archives, err := dist.BuildPluginArchives(ctx, root, dir, l.version, epoch, []string{"linux/" + runtime.GOARCH})
	if err != nil {
		return "", err
	}
	sums, err := dist.WriteChecksums(dir, archives)
	if err != nil {
		return "", err
	}
	manifest, err := dist.KrewManifest(l.version, dist.DownloadURL(l.version), archives, sums)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, dist.KrewManifestName)
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		return "", err
	}
	krew, err := testbed.CIToolPath(nil, "krew.sh")
	if err != nil {
		return "", err
	}
	krewRoot := l.Path("tmp", "krew")
	if err := dist.KrewInstall(ctx, krew, krewRoot, path, filepath.Join(dir, archives[0].Name), archives[0].Platform); err != nil {
		return "", err
	}
	plugin := filepath.Join(krewRoot, "bin", "kubectl-semaphore")
	out, err := exec.CommandContext(ctx, plugin, "version", "--client").Output()
	if err != nil {
		return "", fmt.Errorf("the plugin krew installed: kubectl semaphore version: %w", err)
	}
	if !strings.HasPrefix(string(out), "kubectl-semaphore "+l.version+" ") {
		return "", fmt.Errorf("the plugin krew installed says %q, want version %s", strings.TrimSpace(string(out)), l.version)
	}
	return plugin, nil
}

// pushCharts packages both charts with the lab's version and pushes them to the registry as
// OCI artifacts (oci://<registry>/charts), as `make release REGISTRY=...` does.
func (l *Lab) pushCharts(context.Context) error {
	dir := l.Path(releaseDir)
	charts, err := dist.PackageCharts(testbed.RepoRoot(), dir, l.version)
	if err != nil {
		return err
	}
	refs, err := dist.PushCharts(dir, l.registry, charts, true)
	for _, ref := range refs {
		l.Logf("pushed the chart oci://%s", ref)
	}
	return err
}
