package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// PreviousRelease is the release the lab upgrades from, with traffic flowing: after each
// release, its tag; until the first, a commit of main, the first whose userspace WireGuard
// devices outlive their agent's restart and whose agent hands its peers over (before it, each
// node's tunnels dropped while its agent was replaced, which the CHANGELOG says). test/charts upgrades the charts alone from
// an older commit.
const PreviousRelease = "3dd0fe6fafc7931cffb760052034f3439c775e62"

// Release is a version of Semaphore in the lab's registry: its charts by version, and its
// components' images by the tag that version gives and their digests, by image name.
type Release struct {
	Version string
	Digests map[string]string
}

// ThisRelease is the lab's own release.
func (l *Lab) ThisRelease(ctx context.Context) (Release, error) {
	digests, err := l.releaseDigests(ctx)
	return Release{Version: l.version, Digests: digests}, err
}

// BuildPreviousRelease builds PreviousRelease from its tree in the repository's history (git
// archive) with the release code of this tree, as `make release` would have built it: its
// components' images for this machine, pushed with its version's tag, and both its charts,
// packaged with that version and pushed.
func (l *Lab) BuildPreviousRelease(ctx context.Context) (Release, error) {
	rel := Release{Version: "v0.0.0-lab.g" + PreviousRelease[:12], Digests: map[string]string{}}
	tree := l.Path("tmp", "previous-release")
	if err := os.RemoveAll(tree); err != nil {
		return rel, err
	}
	epoch, err := extractCommit(ctx, PreviousRelease, tree)
	if err != nil {
		return rel, err
	}
	opts := images.Options{Dir: tree, Version: rel.Version, Revision: PreviousRelease, Epoch: epoch}
	tag := dist.ChartVersion(rel.Version)
	for _, spec := range images.Components() {
		spec.Platforms = []string{labPlatform}
		idx, err := images.Build(ctx, spec, opts)
		if err != nil {
			return rel, fmt.Errorf("the previous release's image %s: %w", spec.Name, err)
		}
		ref := l.imagesRegistry() + "/" + spec.Name + ":" + tag
		if err := images.Push(ctx, ref, idx, true); err != nil {
			return rel, fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return rel, err
		}
		rel.Digests[spec.Name] = digest.String()
	}
	dir := filepath.Join(tree, "dist")
	charts, err := dist.PackageCharts(tree, dir, rel.Version)
	if err != nil {
		return rel, fmt.Errorf("the previous release's charts: %w", err)
	}
	_, err = dist.PushCharts(dir, l.registry, charts, true)
	return rel, err
}

// extractCommit writes the tree of commit into dir and returns the commit's time.
func extractCommit(ctx context.Context, commit, dir string) (time.Time, error) {
	root := testbed.RepoRoot()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "show", "-s", "--format=%ct", commit).Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("commit %s (a clone without history lacks it): %w", commit, err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return time.Time{}, err
	}
	tarball := dir + ".tar"
	defer os.Remove(tarball)
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", "--output", tarball, commit).CombinedOutput(); err != nil {
		return time.Time{}, fmt.Errorf("git archive %s: %w: %s", commit, err, out)
	}
	if out, err := exec.CommandContext(ctx, "tar", "-x", "-C", dir, "-f", tarball).CombinedOutput(); err != nil {
		return time.Time{}, fmt.Errorf("extracting %s: %w: %s", commit, err, out)
	}
	return time.Unix(secs, 0), nil
}

// UpgradeUmbrellaTo upgrades cluster's umbrella release to rel's chart and images with the
// values the user gave it, as a user upgrades (`helm get values` into a file, `helm upgrade
// -f` it; --reuse-values would carry this chart's defaults into the other's schema), each
// component's image digest set to rel's, and waits for the rollout.
func (l *Lab) UpgradeUmbrellaTo(ctx context.Context, cluster string, rel Release) error {
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
	for image, key := range componentValues {
		args = append(args, "--set", key+".image.digest="+rel.Digests[image])
	}
	_, err = l.helm(ctx, args...)
	return err
}
