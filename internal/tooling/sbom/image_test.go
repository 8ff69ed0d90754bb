package sbom_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

// caBundle stands for the CA bundle in the images: any content does.
var caBundle = []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n")

// buildImage builds, as internal/tooling/images builds the component images, the image
// semaphore-test for this machine's architecture with the program bin, caBundle as its CA
// bundle and the extra files.
func buildImage(t *testing.T, bin string, extra []images.File) v1.Image {
	t.Helper()
	certs := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(certs, caBundle, 0o644); err != nil {
		t.Fatal(err)
	}
	platform := "linux/" + runtime.GOARCH
	spec := images.Spec{Name: "semaphore-test", Binaries: map[string]string{platform: bin}, Files: extra}
	idx, err := images.Build(context.Background(), spec, images.Options{
		Version: version, Revision: "0123456789abcdef", Epoch: created, CACertificates: certs,
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestForImageListsItsProgramAndTheFilesNotOurs(t *testing.T) {
	bin := builtBinary(t)
	extra := []byte("listen 53\n")
	img := buildImage(t, bin, []images.File{{Path: "/etc/extra.conf", Data: extra}})
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	bom, err := sbom.ForImage(img, sbom.Image{
		Name: "semaphore-test", Version: version, Repository: "ghcr.io/kube-semaphore/semaphore-test",
		CACertificatesVersion: "20230311+deb12u1",
	}, created)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := roundTrip(t, bom)

	image := "pkg:oci/semaphore-test@" + digest.String() + "?arch=" + runtime.GOARCH + "&repository_url=ghcr.io/kube-semaphore/semaphore-test"
	if s := got.Metadata.Component; s == nil || s.BOMRef != image || s.PackageURL != image ||
		s.Type != cdx.ComponentTypeContainer || s.Name != "semaphore-test" || s.Version != version {
		t.Fatalf("the SBOM's subject is %+v, want the container %s", s, image)
	}
	const app = "pkg:golang/github.com/kube-semaphore/semaphore@" + version + "?type=module"
	const ca = "pkg:deb/debian/ca-certificates@20230311%2Bdeb12u1?arch=all"
	const extraRef = "file:/etc/extra.conf"
	comps := byRef(got)
	if c := comps[app]; c.Name != "semaphore-test" || c.Type != cdx.ComponentTypeApplication {
		t.Errorf("the program is %+v, want the application semaphore-test (the entrypoint's name)", c)
	}
	checkModules(t, got, bin, app)
	if c := comps[ca]; c.Name != "ca-certificates" || c.Version != "20230311+deb12u1" || c.Components == nil ||
		len(*c.Components) != 1 || (*c.Components)[0].Name != images.DefaultCACertificates ||
		(*(*c.Components)[0].Hashes)[0].Value != sha256Hex(caBundle) {
		t.Errorf("the CA bundle's package is %+v, want ca-certificates 20230311+deb12u1 holding %s with its SHA-256", c, images.DefaultCACertificates)
	}
	if c := comps[extraRef]; c.Type != cdx.ComponentTypeFile || c.Hashes == nil || (*c.Hashes)[0].Value != sha256Hex(extra) {
		t.Errorf("the extra file is %+v, want a file component with its SHA-256", c)
	}
	for _, ours := range []string{"file:/etc/passwd", "file:/etc/group"} {
		if _, ok := comps[ours]; ok {
			t.Errorf("%s is listed: it is ours, not another's", ours)
		}
	}
	if deps, want := dependsOn(got, image), []string{extraRef, ca, app}; !slices.Equal(deps, want) {
		t.Errorf("the image depends on %v, want %v", deps, want)
	}
}

func TestForImageListsTheCABundleAsAFileWithoutItsPackageVersion(t *testing.T) {
	img := buildImage(t, builtBinary(t), nil)
	bom, err := sbom.ForImage(img, sbom.Image{Name: "semaphore-test", Version: version}, created)
	if err != nil {
		t.Fatal(err)
	}
	got, first := roundTrip(t, bom)
	ref := "file:" + images.DefaultCACertificates
	if c := byRef(got)[ref]; c.Type != cdx.ComponentTypeFile || c.Hashes == nil || (*c.Hashes)[0].Value != sha256Hex(caBundle) {
		t.Errorf("the CA bundle is %+v, want a file component with its SHA-256", c)
	}
	again, err := sbom.ForImage(img, sbom.Image{Name: "semaphore-test", Version: version}, created)
	if err != nil {
		t.Fatal(err)
	}
	if _, second := roundTrip(t, again); !bytes.Equal(first, second) {
		t.Error("the same image gave different SBOMs")
	}
}
