package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

// cosignScript is the ci script that builds cosign once, caches it and prints its path: the
// verifier docs/verifying.md has users run, independent of our code.
const cosignScript = "cosign.sh"

// releaseVerifier runs docs/verifying.md's commands in the lab's release directory.
type releaseVerifier struct {
	dir, cosign, openssl string
	// env keeps cosign offline, as the tests of internal/tooling/signing do: an empty home, cache and
	// TUF root, and every connection but to this machine's loopback (the lab's registry) sent
	// to a proxy that refuses it, so that nothing it verifies depends on the network.
	env []string
}

// Verify verifies the lab's release, as Sign left it, offline with its release-key.pub, with the
// commands of docs/verifying.md: sha256sum -c SHA256SUMS, SHA256SUMS's signature with openssl,
// every signed file with cosign verify-blob, every component's image by the digest its tag has
// in the lab's registry with cosign verify, and every SBOM. The first that fails fails the lab,
// naming it; what was verified is logged, a line for each kind.
func (b *Builder) Verify(ctx context.Context) error {
	rel := &b.signed
	start := time.Now()
	v, err := b.releaseVerifier()
	if err != nil {
		return err
	}
	how, err := v.checksums(ctx)
	if err != nil {
		return err
	}
	if err := v.files(ctx, rel.signed); err != nil {
		return err
	}
	b.Logf("release %s: verified %s (%s) and the signatures of %d files with cosign verify-blob: %s",
		b.Version, dist.ChecksumsFile, how, len(rel.signed), strings.Join(rel.signed, ", "))
	digests, err := b.ImageDigests(ctx)
	if err != nil {
		return err
	}
	verified, err := v.images(ctx, b.ImagesRegistry(), digests, rel.images)
	if err != nil {
		return err
	}
	b.Logf("release %s: verified the signatures of %d images by digest with cosign verify: %s", b.Version, len(verified), strings.Join(verified, ", "))
	if err := v.sboms(rel.sboms, b.Version); err != nil {
		return err
	}
	b.Logf("release %s: verified %d SBOMs, CycloneDX %s, each naming its program or image: %s (all offline with %s, in %s)",
		b.Version, len(rel.sboms), sbom.SpecVersion, strings.Join(slices.Sorted(maps.Keys(rel.sboms)), ", "),
		dist.PublicKeyFile, time.Since(start).Round(10*time.Millisecond))
	return nil
}

// releaseVerifier finds cosign and openssl (ci/cosign.sh) and makes cosign's empty home.
func (b *Builder) releaseVerifier() (releaseVerifier, error) {
	v := releaseVerifier{dir: b.Dir}
	var err error
	if v.cosign, err = testbed.CIToolPath(nil, cosignScript); err != nil {
		return v, err
	}
	// Like Prometheus, openssl may be missing where it cannot be installed (not root): the
	// signature of SHA256SUMS is then verified by cosign alone.
	if v.openssl, err = testbed.CIToolPath(nil, cosignScript, "openssl"); err != nil {
		b.Logf("openssl: %v; the lab verifies the signature of SHA256SUMS with cosign alone", err)
		v.openssl = ""
	}
	home := filepath.Join(b.Tmp, "cosign")
	if err := os.RemoveAll(home); err != nil {
		return v, err
	}
	v.env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"),
		"SIGSTORE_NO_CACHE=true", "DOCKER_CONFIG="+filepath.Join(home, "docker"),
		"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=", "no_proxy=")
	return v, os.MkdirAll(home, 0o755)
}

// run runs a command of docs/verifying.md in the release directory and returns its output
// (stdout, stderr); what for names what it verifies, in the error.
func (v releaseVerifier) run(ctx context.Context, what, bin string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = v.dir, v.env, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("the lab's release: %s does not verify: %s %s: %w\n%s%s",
			what, filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}

// checksums runs `sha256sum -c SHA256SUMS`, and verifies SHA256SUMS's signature with openssl,
// as docs/verifying.md does; it says what it ran.
func (v releaseVerifier) checksums(ctx context.Context) (string, error) {
	if _, _, err := v.run(ctx, dist.ChecksumsFile, "sha256sum", "-c", dist.ChecksumsFile); err != nil {
		return "", err
	}
	if v.openssl == "" {
		return "sha256sum -c", nil
	}
	sig := dist.ChecksumsFile + ".sig"
	der, _, err := v.run(ctx, sig, "base64", "-d", sig)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(v.dir, sig+".der"), []byte(der), 0o644); err != nil {
		return "", err
	}
	out, _, err := v.run(ctx, dist.ChecksumsFile+" (openssl)", v.openssl, "dgst", "-sha256", "-verify", dist.PublicKeyFile, "-signature", sig+".der", dist.ChecksumsFile)
	if err == nil && out != "Verified OK\n" {
		err = fmt.Errorf("the lab's release: openssl says of %s: %q, not Verified OK", dist.ChecksumsFile, out)
	}
	return "sha256sum -c, openssl dgst -verify", err
}

// files verifies the signature of each file with cosign verify-blob.
func (v releaseVerifier) files(ctx context.Context, files []string) error {
	for _, f := range files {
		_, stderr, err := v.run(ctx, f, v.cosign, "verify-blob", "--key", dist.PublicKeyFile, "--signature", f+".sig", "--insecure-ignore-tlog=true", f)
		if err != nil {
			return err
		}
		if !strings.Contains(stderr, "Verified OK") {
			return fmt.Errorf("the lab's release: cosign verify-blob did not say Verified OK of %s:\n%s", f, stderr)
		}
	}
	return nil
}

// images verifies with cosign verify, by digest, the image of each component: the digest its
// tag has in registry, which must be one the release signed. The lab's registry serves plain
// HTTP: --allow-http-registry. It returns what it verified.
func (v releaseVerifier) images(ctx context.Context, registry string, digests map[string]string, signed []string) ([]string, error) {
	var verified []string
	for _, spec := range images.Components() {
		repo := registry + "/" + spec.Name
		ref := repo + "@" + digests[spec.Name]
		if !slices.Contains(signed, ref) {
			return nil, fmt.Errorf("the lab's release: %s, the digest of %s's tag, is not one it signed (%s)", ref, spec.Name, strings.Join(signed, ", "))
		}
		stdout, _, err := v.run(ctx, ref, v.cosign, "verify", "--key", dist.PublicKeyFile, "--insecure-ignore-tlog=true", "--allow-http-registry", ref)
		if err != nil {
			return nil, err
		}
		if err := checkSignedPayload(stdout, repo, digests[spec.Name]); err != nil {
			return nil, fmt.Errorf("the lab's release: cosign verify %s: %w", ref, err)
		}
		verified = append(verified, ref)
	}
	return verified, nil
}

// checkSignedPayload checks that the payloads cosign verify printed name repo and digest, as
// docs/verifying.md says they do.
func checkSignedPayload(out, repo, digest string) error {
	var payloads []struct {
		Critical struct {
			Identity struct {
				DockerReference string `json:"docker-reference"`
			} `json:"identity"`
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal([]byte(out), &payloads); err != nil {
		return fmt.Errorf("its output is not the signed payloads: %w\n%s", err, out)
	}
	if len(payloads) == 0 {
		return fmt.Errorf("no signed payload: %s", out)
	}
	for _, p := range payloads {
		if p.Critical.Identity.DockerReference != repo || p.Critical.Image.DockerManifestDigest != digest {
			return fmt.Errorf("a payload names %s@%s", p.Critical.Identity.DockerReference, p.Critical.Image.DockerManifestDigest)
		}
	}
	return nil
}

// sboms checks that each SBOM is a CycloneDX document of sbom.SpecVersion whose subject is the
// program or image it is named for, at version, and that every component's image has one.
func (v releaseVerifier) sboms(sboms map[string]string, version string) error {
	for _, spec := range images.Components() {
		if !slices.Contains(slices.Collect(maps.Values(sboms)), spec.Name) {
			return fmt.Errorf("the lab's release: no SBOM of the image %s", spec.Name)
		}
	}
	for file, subject := range sboms {
		if err := checkSBOM(filepath.Join(v.dir, file), subject, version); err != nil {
			return fmt.Errorf("the lab's release: the SBOM %s: %w", file, err)
		}
	}
	return nil
}

// checkSBOM checks that the file at path is a CycloneDX JSON document of sbom.SpecVersion about
// subject at version, listing what it is made of.
func checkSBOM(path, subject, version string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return fmt.Errorf("not CycloneDX JSON: %w", err)
	}
	switch {
	case bom.BOMFormat != cdx.BOMFormat || bom.SpecVersion != sbom.SpecVersion:
		return fmt.Errorf("a %s %s document, not %s %s", bom.BOMFormat, bom.SpecVersion, cdx.BOMFormat, sbom.SpecVersion)
	case bom.Metadata == nil || bom.Metadata.Component == nil:
		return fmt.Errorf("it names nothing it is of (metadata.component), not %s", subject)
	case bom.Metadata.Component.Name != subject || bom.Metadata.Component.Version != version:
		return fmt.Errorf("it is of %s %s, not %s %s", bom.Metadata.Component.Name, bom.Metadata.Component.Version, subject, version)
	case bom.Components == nil || len(*bom.Components) == 0:
		return fmt.Errorf("it lists nothing %s is made of", subject)
	}
	return nil
}
