package release

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

// writeBOM writes an SBOM about a subject of the given name and version, holding one library.
func writeBOM(t *testing.T, name, version string) string {
	t.Helper()
	bom := cdx.NewBOM()
	bom.SpecVersion = sbom.SpecVersion
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{Type: cdx.ComponentTypeApplication, Name: name, Version: version}}
	bom.Components = &[]cdx.Component{{Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: "go1.25.0"}}
	var buf bytes.Buffer
	if err := sbom.Write(&buf, bom); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".cdx.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// An SBOM passes only as a CycloneDX document about what it is named for, at the release's
// version.
func TestCheckSBOMRefusesAnSBOMOfAnythingElse(t *testing.T) {
	path := writeBOM(t, "kubectl-semaphore", "v0.0.0-lab.gabc")
	if err := checkSBOM(path, "kubectl-semaphore", "v0.0.0-lab.gabc"); err != nil {
		t.Errorf("the SBOM of kubectl-semaphore: %v", err)
	}
	if err := checkSBOM(path, "semaphore-policy", "v0.0.0-lab.gabc"); err == nil {
		t.Error("accepted kubectl-semaphore's SBOM as semaphore-policy's")
	}
	if err := checkSBOM(path, "kubectl-semaphore", "v1.0.0"); err == nil {
		t.Error("accepted the SBOM of another version")
	}
	notBOM := filepath.Join(t.TempDir(), "x.cdx.json")
	if err := os.WriteFile(notBOM, []byte(`{"kind":"nothing"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkSBOM(notBOM, "kubectl-semaphore", "v0.0.0-lab.gabc"); err == nil {
		t.Error("accepted a JSON document that is not CycloneDX")
	}
}

// What cosign verify prints passes only when every payload names the image and its digest.
func TestCheckSignedPayloadNeedsTheRepositoryAndDigest(t *testing.T) {
	const repo, digest = "127.0.0.1:5000/kube-semaphore/semaphore-policy", "sha256:d9e2"
	payload := func(r, d string) string {
		return `[{"critical":{"identity":{"docker-reference":"` + r + `"},"image":{"docker-manifest-digest":"` + d + `"},"type":"cosign container image signature"},"optional":null}]`
	}
	if err := checkSignedPayload(payload(repo, digest), repo, digest); err != nil {
		t.Errorf("refused the image's payload: %v", err)
	}
	for name, out := range map[string]string{
		"another digest":     payload(repo, "sha256:0000"),
		"another repository": payload("127.0.0.1:5000/kube-semaphore/semaphore-wireguard", digest),
		"no payload":         "[]",
		"not JSON":           "Verified OK",
	} {
		if err := checkSignedPayload(out, repo, digest); err == nil {
			t.Errorf("accepted %s", name)
		}
	}
}
