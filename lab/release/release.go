package release

import (
	"context"
	"path/filepath"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// Builder builds the lab's release, pushes it to the lab's registry, signs it and verifies it:
// what it needs, which the lab sets as it learns it, and what signing made, for Verify.
type Builder struct {
	// Dir is the release directory, as `make release`'s: the plugin's archive and its krew
	// manifest, the charts, the images' OCI image layout (ImagesLayout), the SBOMs, SHA256SUMS,
	// the signatures and the public key.
	Dir string
	// Tmp is where what is not the release goes: krew's root, cosign's home, the previous
	// release's tree.
	Tmp string
	// Version is the release's version (SetVersion): of its images, charts and plugin.
	Version string
	// Registry is the host:port of the lab's OCI registry, where the images and charts go.
	Registry string
	// Platform is the one platform the release is built for: this machine's.
	Platform string
	// Logf prints a progress line.
	Logf func(format string, args ...any)

	// signed is what Sign made of the release, for Verify to check.
	signed signedRelease
}

// imagesLayout (in the release directory) is the OCI image layout of the components' images,
// as `make release` writes its images/.
const imagesLayout = "images"

// SetVersion sets the lab's release version, from the tree it is built from.
func (b *Builder) SetVersion(ctx context.Context) error {
	v, err := dist.SnapshotVersion(ctx, testbed.RepoRoot(), "lab")
	if err != nil {
		return err
	}
	b.Version = v
	return nil
}

// ImagesLayout is where the components' images go as an OCI image layout, in the release
// directory: what their SBOMs describe and their signatures sign.
func (b *Builder) ImagesLayout() string { return filepath.Join(b.Dir, imagesLayout) }

// ImageRef is the reference of image name in the lab's registry, by the release's tag (the
// charts' appVersion).
func (b *Builder) ImageRef(name string) string {
	return b.ImagesRegistry() + "/" + name + ":" + dist.ChartVersion(b.Version)
}

// ImagesRegistry is where the images are, what global.image.registry says: <registry>/kube-semaphore.
func (b *Builder) ImagesRegistry() string { return b.Registry + "/" + layout.ImagesRepo }

// PushCharts packages both charts with the lab's version and pushes them to the registry as
// OCI artifacts (oci://<registry>/charts), as `make release REGISTRY=...` does; it returns the
// packaged charts, files of the release.
func (b *Builder) PushCharts(context.Context) ([]dist.Artifact, error) {
	charts, err := dist.PackageCharts(testbed.RepoRoot(), b.Dir, b.Version)
	if err != nil {
		return nil, err
	}
	refs, err := dist.PushCharts(b.Dir, b.Registry, charts, true)
	for _, ref := range refs {
		b.Logf("pushed the chart oci://%s", ref)
	}
	return charts, err
}
