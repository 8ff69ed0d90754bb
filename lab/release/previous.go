package release

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
)

// PreviousRelease is the release the lab upgrades from, with traffic flowing: after each
// release, its tag; until the first, a commit of main, the first that connects a cluster whose
// nodes are private (gcp) through its gateway nodes, as the lab's gcp is: its agents elect the
// gateways, and its chart's admission policy lets the active gateway publish its term. (Before
// it, gcp's agents could not reach any remote.) test/charts upgrades the charts alone from an
// older commit.
const PreviousRelease = "2e418d16d3028a7ee8ba5873440f6bae978a6b77"

// Release is a version of Semaphore in the lab's registry: its charts by version, and its
// components' images by the tag that version gives and their digests, by image name.
type Release struct {
	Version string
	Digests map[string]string
}

// DigestSets are helm's --set arguments that set each component's image.digest in the umbrella
// chart's values to rel's.
func (rel Release) DigestSets() []string {
	var args []string
	for image, key := range componentValues {
		args = append(args, "--set", key+".image.digest="+rel.Digests[image])
	}
	return args
}

// Pushed is the lab's own release, as its registry has it.
func (b *Builder) Pushed(ctx context.Context) (Release, error) {
	digests, err := b.ImageDigests(ctx)
	return Release{Version: b.Version, Digests: digests}, err
}

// BuildPrevious builds PreviousRelease from its tree in the repository's history (git
// archive) with the release code of this tree, as `make release` would have built it: its
// components' images for this machine, pushed with its version's tag, and both its charts,
// packaged with that version and pushed.
func (b *Builder) BuildPrevious(ctx context.Context) (Release, error) {
	rel := Release{Version: "v0.0.0-lab.g" + PreviousRelease[:12], Digests: map[string]string{}}
	tree := filepath.Join(b.Tmp, "previous-release")
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
		spec.Platforms = []string{b.Platform}
		idx, err := images.Build(ctx, spec, opts)
		if err != nil {
			return rel, fmt.Errorf("the previous release's image %s: %w", spec.Name, err)
		}
		ref := b.ImagesRegistry() + "/" + spec.Name + ":" + tag
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
	_, err = dist.PushCharts(dir, b.Registry, charts, true)
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
