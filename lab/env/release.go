package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// The lab runs a release as users get one, built by the code `make release` runs (internal/tooling/dist)
// with a version of its own (v0.0.0-lab.g<commit>): the images tagged with it and installed by
// that tag and the digest of the index the lab pushed (release_images.go), both charts packaged
// with it and installed from the registry by that version, and kubectl-semaphore installed by
// krew from the release's archive for this machine, checked against the release's krew
// manifest. As `make release SNAPSHOT=1` does, the lab signs it with a key made for it and
// writes the SBOMs (release_sign.go), and then verifies it offline as docs/verifying.md has
// users do, with cosign itself (release_verify.go).

// releaseDir is where, in the lab directory, the lab's release goes.
const releaseDir = "release"

// labPlatform is this machine's platform, the one platform the lab builds its release for.
const labPlatform = "linux/" + runtime.GOARCH

// labVersion sets the lab's release version, from the tree it is built from.
func (l *Lab) labVersion(ctx context.Context) error {
	v, err := dist.SnapshotVersion(ctx, testbed.RepoRoot(), "lab")
	if err != nil {
		return err
	}
	l.version = v
	return nil
}

// installPlugin builds the release's kubectl-semaphore archive for this machine (with its
// SBOM), writes its krew manifest, and installs it with `krew install --manifest --archive`
// into the lab's krew root; it returns the installed plugin. It starts the lab's release
// directory afresh, and has ci/cosign.sh build cosign on a fresh machine, meanwhile.
func (l *Lab) installPlugin(ctx context.Context) (string, error) {
	dir := l.Path(releaseDir)
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
	archives, err := dist.BuildPluginArchives(ctx, root, dir, l.version, epoch, []string{labPlatform})
	if err != nil {
		return "", err
	}
	path, err := writeKrewManifest(dir, l.version, archives)
	if err != nil {
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

// writeKrewManifest writes the krew manifest of the archives into dir and returns its path.
// SHA256SUMS, which lists the archives with the rest of the release, comes once the rest is
// there (signRelease).
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

// pushCharts packages both charts with the lab's version and pushes them to the registry as
// OCI artifacts (oci://<registry>/charts), as `make release REGISTRY=...` does; it returns the
// packaged charts, files of the release.
func (l *Lab) pushCharts(context.Context) ([]dist.Artifact, error) {
	dir := l.Path(releaseDir)
	charts, err := dist.PackageCharts(testbed.RepoRoot(), dir, l.version)
	if err != nil {
		return nil, err
	}
	refs, err := dist.PushCharts(dir, l.registry, charts, true)
	for _, ref := range refs {
		l.Logf("pushed the chart oci://%s", ref)
	}
	return charts, err
}
