package sbom_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

func TestSameInputsGiveTheSameBytes(t *testing.T) {
	bin := builtBinary(t)
	write := func(at time.Time) (string, []byte) {
		bom, err := sbom.ForBinary(bin, "kubectl-semaphore", version, at)
		if err != nil {
			t.Fatal(err)
		}
		got, raw := roundTrip(t, bom)
		return got.SerialNumber, raw
	}
	serial, first := write(created)
	if _, again := write(created); !bytes.Equal(first, again) {
		t.Error("the same binary, name, version and time gave different SBOMs")
	}
	if later, _ := write(created.Add(time.Second)); later == serial {
		t.Error("another timestamp gave the same serial number")
	}
}

// TestSBOMsFollowTheCycloneDXSchema validates a binary's and an image's SBOM against
// CycloneDX's JSON schema, as cyclonedx-go ships it.
func TestSBOMsFollowTheCycloneDXSchema(t *testing.T) {
	schema := cycloneDXSchema(t)
	bin := builtBinary(t)
	forBinary, err := sbom.ForBinary(bin, "kubectl-semaphore", version, created)
	if err != nil {
		t.Fatal(err)
	}
	forImage, err := sbom.ForImage(buildImage(t, bin, nil), sbom.Image{
		Name: "semaphore-test", Version: version, Repository: "ghcr.io/kube-semaphore/semaphore-test", CACertificatesVersion: "20230311+deb12u1",
	}, created)
	if err != nil {
		t.Fatal(err)
	}
	for name, bom := range map[string]*cdx.BOM{"binary": forBinary, "image": forImage} {
		_, raw := roundTrip(t, bom)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("the %s's SBOM does not follow the CycloneDX 1.6 schema: %v", name, err)
		}
	}
}

// cycloneDXSchema compiles CycloneDX 1.6's JSON schema from cyclonedx-go's module (with the
// SPDX and JSF schemas it refers to), offline, with format assertions.
func cycloneDXSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/CycloneDX/cyclonedx-go: %v", err)
	}
	dir := filepath.Join(string(bytes.TrimSpace(out)), "schema")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for file, id := range map[string]string{
		"bom-1.6.schema.json":   "http://cyclonedx.org/schema/bom-1.6.schema.json",
		"spdx.schema.json":      "http://cyclonedx.org/schema/spdx.schema.json",
		"jsf-0.82.schemax.json": "http://cyclonedx.org/schema/jsf-0.82.schema.json",
	} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	schema, err := c.Compile("http://cyclonedx.org/schema/bom-1.6.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return schema
}
