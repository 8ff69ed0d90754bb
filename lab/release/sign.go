package release

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// signedRelease is what Sign made of the lab's release, for Verify to check.
type signedRelease struct {
	// signed are the files of the release directory signed as <file>.sig.
	signed []string
	// images are the pushed images signed, by digest (<registry>/kube-semaphore/<name>@sha256:...).
	images []string
	// sboms are the SBOMs, by file name, with the name of what each is of: the program
	// (kubectl-semaphore) or the image (semaphore-policy).
	sboms map[string]string
}

// Sign finishes the lab's release as `make release SNAPSHOT=1` does, and says what it wrote and
// signed (sign), for Verify.
func (b *Builder) Sign(ctx context.Context, charts []dist.Artifact) error {
	start := time.Now()
	rel, err := b.sign(ctx, charts)
	if err != nil {
		return err
	}
	b.signed = *rel
	b.Logf("release %s: wrote %d SBOMs and %s, signed %d files and %d images with a key made for the lab (%s), in %s",
		b.Version, len(rel.sboms), dist.ChecksumsFile, len(rel.signed), len(rel.images),
		filepath.Join(b.Dir, dist.PublicKeyFile), time.Since(start).Round(10*time.Millisecond))
	return nil
}

// sign finishes the lab's release as `make release SNAPSHOT=1` does (hack/release), with
// the same functions: the SBOMs of the images (the plugin archive's came with it), SHA256SUMS
// of the archive, the charts and the SBOMs, and, with a key made for this lab whose public half
// is release-key.pub, a signature of SHA256SUMS, the krew manifest and every file SHA256SUMS
// lists, and of every pushed image (cosign's .sig tags).
func (b *Builder) sign(ctx context.Context, charts []dist.Artifact) (*signedRelease, error) {
	dir := b.Dir
	layoutDir := b.ImagesLayout()
	epoch, err := images.SourceDateEpoch(ctx, testbed.RepoRoot())
	if err != nil {
		return nil, err
	}
	imageSBOMs, err := dist.ImageSBOMs(ctx, layoutDir, dir, b.Version, b.ImagesRegistry(), epoch)
	if err != nil {
		return nil, err
	}
	plugin := dist.PluginArtifact(b.Version, b.Platform)
	files := slices.Concat([]dist.Artifact{plugin, {Name: plugin.SBOM}}, charts, imageSBOMs)
	if _, err := dist.WriteChecksums(dir, files); err != nil {
		return nil, err
	}
	rel := &signedRelease{signed: []string{dist.ChecksumsFile, dist.KrewManifestName}, sboms: map[string]string{plugin.SBOM: "kubectl-semaphore"}}
	for _, f := range files {
		rel.signed = append(rel.signed, f.Name)
	}
	for _, s := range imageSBOMs {
		rel.sboms[s.Name] = imageOfSBOM(s.Name, b.Version)
	}
	key, err := signing.GenerateKey()
	if err != nil {
		return nil, err
	}
	public, err := signing.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, dist.PublicKeyFile), public, 0o644); err != nil {
		return nil, err
	}
	if err := dist.SignFiles(dir, key, rel.signed); err != nil {
		return nil, err
	}
	rel.images, err = dist.SignPushedImages(ctx, key, layoutDir, b.ImagesRegistry(), true)
	return rel, err
}

// imageOfSBOM is the image an SBOM that dist.ImageSBOMs wrote is of, by its name:
// <image>_<version>_<os>_<arch>.cdx.json.
func imageOfSBOM(file, version string) string {
	image, _, _ := strings.Cut(file, "_"+version+"_")
	return image
}
