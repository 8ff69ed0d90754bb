package env

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// imagesLayout (in the release directory) is the OCI image layout of the components' images,
// as `make release` writes its images/.
const imagesLayout = "images"

// labRelease is what signRelease made of the lab's release, for verifyRelease to check.
type labRelease struct {
	// signed are the files of the release directory signed as <file>.sig.
	signed []string
	// images are the pushed images signed, by digest (<registry>/kube-semaphore/<name>@sha256:...).
	images []string
	// sboms are the SBOMs, by file name, with the name of what each is of: the program
	// (kubectl-semaphore) or the image (semaphore-policy).
	sboms map[string]string
}

// signRelease finishes the lab's release as `make release SNAPSHOT=1` does (hack/release), with
// the same functions: the SBOMs of the images (the plugin archive's came with it), SHA256SUMS
// of the archive, the charts and the SBOMs, and, with a key made for this lab whose public half
// is release-key.pub, a signature of SHA256SUMS, the krew manifest and every file SHA256SUMS
// lists, and of every pushed image (cosign's .sig tags).
func (l *Lab) signRelease(ctx context.Context, charts []dist.Artifact) (*labRelease, error) {
	dir := l.Path(releaseDir)
	layoutDir := filepath.Join(dir, imagesLayout)
	epoch, err := images.SourceDateEpoch(ctx, testbed.RepoRoot())
	if err != nil {
		return nil, err
	}
	imageSBOMs, err := dist.ImageSBOMs(ctx, layoutDir, dir, l.version, l.imagesRegistry(), epoch)
	if err != nil {
		return nil, err
	}
	plugin := dist.PluginArtifact(l.version, labPlatform)
	files := slices.Concat([]dist.Artifact{plugin, {Name: plugin.SBOM}}, charts, imageSBOMs)
	if _, err := dist.WriteChecksums(dir, files); err != nil {
		return nil, err
	}
	rel := &labRelease{signed: []string{dist.ChecksumsFile, dist.KrewManifestName}, sboms: map[string]string{plugin.SBOM: "kubectl-semaphore"}}
	for _, f := range files {
		rel.signed = append(rel.signed, f.Name)
	}
	for _, s := range imageSBOMs {
		rel.sboms[s.Name] = imageOfSBOM(s.Name, l.version)
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
	rel.images, err = dist.SignPushedImages(ctx, key, layoutDir, l.imagesRegistry(), true)
	return rel, err
}

// imageOfSBOM is the image an SBOM that dist.ImageSBOMs wrote is of, by its name:
// <image>_<version>_<os>_<arch>.cdx.json.
func imageOfSBOM(file, version string) string {
	image, _, _ := strings.Cut(file, "_"+version+"_")
	return image
}
