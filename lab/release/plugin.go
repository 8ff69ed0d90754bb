package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// InstallPlugin builds the release's kubectl-semaphore archive for this machine (with its
// SBOM), writes its krew manifest, and installs it with `krew install --manifest --archive`
// into the lab's krew root; it returns the installed plugin. It starts the lab's release
// directory afresh, and has ci/cosign.sh build cosign on a fresh machine, meanwhile.
func (b *Builder) InstallPlugin(ctx context.Context) (string, error) {
	dir := b.Dir
	// Like make release's directory, it never mixes a release with the files of another.
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := testbed.CIToolPath(nil, cosignScript); err != nil {
		return "", err
	}
	root := testbed.RepoRoot()
	epoch, err := images.SourceDateEpoch(ctx, root)
	if err != nil {
		return "", err
	}
	archives, err := dist.BuildPluginArchives(ctx, root, dir, b.Version, epoch, []string{b.Platform})
	if err != nil {
		return "", err
	}
	path, err := writeKrewManifest(dir, b.Version, archives)
	if err != nil {
		return "", err
	}
	krew, err := testbed.CIToolPath(nil, "krew.sh")
	if err != nil {
		return "", err
	}
	krewRoot := filepath.Join(b.Tmp, "krew")
	if err := dist.KrewInstall(ctx, krew, krewRoot, path, filepath.Join(dir, archives[0].Name), archives[0].Platform); err != nil {
		return "", err
	}
	plugin := filepath.Join(krewRoot, "bin", "kubectl-semaphore")
	out, err := exec.CommandContext(ctx, plugin, "version", "--client").Output()
	if err != nil {
		return "", fmt.Errorf("the plugin krew installed: kubectl semaphore version: %w", err)
	}
	if !strings.HasPrefix(string(out), "kubectl-semaphore "+b.Version+" ") {
		return "", fmt.Errorf("the plugin krew installed says %q, want version %s", strings.TrimSpace(string(out)), b.Version)
	}
	return plugin, nil
}

// writeKrewManifest writes the krew manifest of the archives into dir and returns its path.
// SHA256SUMS, which lists the archives with the rest of the release, comes once the rest is
// there (Sign).
func writeKrewManifest(dir, version string, archives []dist.Artifact) (string, error) {
	sums := map[string]string{}
	for _, a := range archives {
		sum, err := dist.SHA256(filepath.Join(dir, a.Name))
		if err != nil {
			return "", err
		}
		sums[a.Name] = sum
	}
	manifest, err := dist.KrewManifest(version, dist.DownloadURL(version), archives, sums)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, dist.KrewManifestName)
	return path, os.WriteFile(path, manifest, 0o644)
}
