package sbom_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

const version = "v1.2.3"

var created = time.Date(2026, 11, 23, 22, 9, 39, 0, time.UTC)

// binDir holds the binary kubectlSemaphore builds, once for all the tests here; TestMain
// removes it.
var binDir string

// kubectlSemaphore builds ./cmd/kubectl-semaphore for linux as the release builds its binaries
// (images.GoBuild: -trimpath, no VCS stamp, static).
var kubectlSemaphore = sync.OnceValues(func() (string, error) {
	var err error
	if binDir, err = os.MkdirTemp("", "sbom-test-"); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "kubectl-semaphore")
	return bin, images.GoBuild(context.Background(), testbed.RepoRoot(), "./cmd/kubectl-semaphore", bin, "linux/"+runtime.GOARCH, version)
})

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func builtBinary(t *testing.T) string {
	t.Helper()
	bin, err := kubectlSemaphore()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// roundTrip writes bom as JSON and decodes it with cyclonedx-go, so that the tests look at
// what a reader of the file sees.
func roundTrip(t *testing.T, bom *cdx.BOM) (*cdx.BOM, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := sbom.Write(&buf, bom); err != nil {
		t.Fatal(err)
	}
	var got cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(buf.Bytes()), cdx.BOMFileFormatJSON).Decode(&got); err != nil {
		t.Fatalf("cyclonedx-go cannot decode the SBOM: %v", err)
	}
	return &got, buf.Bytes()
}

// byRef indexes the BOM's components, nested ones included, by bom-ref.
func byRef(bom *cdx.BOM) map[string]cdx.Component {
	out := map[string]cdx.Component{}
	var add func([]cdx.Component)
	add = func(cs []cdx.Component) {
		for _, c := range cs {
			out[c.BOMRef] = c
			if c.Components != nil {
				add(*c.Components)
			}
		}
	}
	add(*bom.Components)
	return out
}

// dependsOn is what the dependency graph says ref depends on.
func dependsOn(bom *cdx.BOM, ref string) []string {
	for _, d := range *bom.Dependencies {
		if d.Ref == ref && d.Dependencies != nil {
			return *d.Dependencies
		}
	}
	return nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
