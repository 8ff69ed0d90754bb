package dist

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// PublicKeyFile is the release key's public half, in a release's directory and in the
// repository's docs/ (docs/verifying.md).
const PublicKeyFile = "release-key.pub"

// refNameAnnotation names an image of an OCI image layout, as internal/tooling/images writes it.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// writeSBOM writes bom into dir as name.
func writeSBOM(dir, name string, bom *cdx.BOM) error {
	var buf bytes.Buffer
	if err := sbom.Write(&buf, bom); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
}

// SBOMName is the name of the SBOM of a file or image name (without its extension).
func SBOMName(name string) string { return name + ".cdx.json" }

// ImageSBOMs writes the SBOM of every platform's image of the OCI image layout at layoutDir into
// dir, as <image>_<version>_<os>_<arch>.cdx.json; registry, when set, is where they are published. The
// CA bundle is described as the build machine's ca-certificates package.
func ImageSBOMs(ctx context.Context, layoutDir, dir, version, registry string, created time.Time) ([]Artifact, error) {
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		return nil, err
	}
	ca, err := sbom.DebianPackageVersion(ctx, "ca-certificates")
	if err != nil {
		return nil, err
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Artifact
	for _, m := range manifest.Manifests {
		ref, err := name.ParseReference(m.Annotations[refNameAnnotation])
		if err != nil {
			return nil, fmt.Errorf("the layout's image %s: %w", m.Digest, err)
		}
		idx, err := top.ImageIndex(m.Digest)
		if err != nil {
			return nil, err
		}
		desc := sbom.Image{Name: imageName(ref), Version: version, CACertificatesVersion: ca}
		if registry != "" {
			desc.Repository = strings.TrimSuffix(registry, "/") + "/" + desc.Name
		}
		written, err := platformSBOMs(idx, dir, desc, created)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
		out = append(out, written...)
	}
	return out, nil
}

// imageName is the last part of ref's repository: semaphore-policy.
func imageName(ref name.Reference) string {
	repo := ref.Context().RepositoryStr()
	return repo[strings.LastIndex(repo, "/")+1:]
}

// platformSBOMs writes the SBOM of each platform's image of idx.
func platformSBOMs(idx v1.ImageIndex, dir string, desc sbom.Image, created time.Time) ([]Artifact, error) {
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Artifact
	for _, m := range manifest.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		bom, err := sbom.ForImage(img, desc, created)
		if err != nil {
			return nil, err
		}
		a := Artifact{Name: SBOMName(fmt.Sprintf("%s_%s_%s_%s", desc.Name, desc.Version, m.Platform.OS, m.Platform.Architecture))}
		if err := writeSBOM(dir, a.Name, bom); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// SignFiles writes, next to each file of dir, <file>.sig: its signature by key in cosign's
// sign-blob format, which `cosign verify-blob` and openssl check (docs/verifying.md).
func SignFiles(dir string, key *ecdsa.PrivateKey, files []string) error {
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		sig, err := signing.SignBlob(key, data)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f+".sig"), sig, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// SignPushedImages signs, in registry, every image of the OCI image layout at layoutDir by its
// index digest (cosign's .sig tags), over plain HTTP when plainHTTP; it returns what it signed.
func SignPushedImages(ctx context.Context, key *ecdsa.PrivateKey, layoutDir, registry string, plainHTTP bool) ([]string, error) {
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		return nil, err
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var opts []name.Option
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	var signed []string
	for _, m := range manifest.Manifests {
		ref, err := name.ParseReference(m.Annotations[refNameAnnotation])
		if err != nil {
			return nil, err
		}
		digest, err := name.NewDigest(strings.TrimSuffix(registry, "/")+"/"+imageName(ref)+"@"+m.Digest.String(), opts...)
		if err != nil {
			return nil, err
		}
		if _, err := signing.SignImage(ctx, key, digest, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return nil, fmt.Errorf("signing %s: %w", digest, err)
		}
		signed = append(signed, digest.String())
	}
	return signed, nil
}
