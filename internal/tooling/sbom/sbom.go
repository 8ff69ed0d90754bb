// Package sbom writes the CycloneDX software bills of materials (JSON, spec 1.6) of a release:
// one for each Go binary, read from the build information the Go linker puts in every binary
// (the main module, every module linked in with its version and go.sum hash, the Go version and
// the build settings; no source tree or scanner needed), and one for each container image: its
// program's, plus the files in the image that are not ours (the CA bundle, from Debian's
// ca-certificates package).
//
// The output is deterministic: the same inputs give the same bytes. Components and the
// dependency graph are sorted, the timestamp is the one given (a release uses
// SOURCE_DATE_EPOCH), and the serial number is derived from the rest of the document.
package sbom

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SpecVersion is the CycloneDX specification the documents follow.
const SpecVersion = cdx.SpecVersion1_6

// schemaURL is the $schema of a SpecVersion document.
const schemaURL = "http://cyclonedx.org/schema/bom-1.6.schema.json"

// ForBinary is the SBOM of the Go binary at path, released as name at version (vX.Y.Z, as Go
// modules spell versions): the program is the BOM's subject, an application component
// (purl pkg:golang/<main module>@<version>?type=module), and every module linked into it and
// the Go standard library are its components, all of them its direct dependencies (the build
// information does not say which module needs which). created is the BOM's timestamp.
func ForBinary(path, name, version string, created time.Time) (*cdx.BOM, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	prog, err := readProgram(data, name, version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	bom := newBOM(prog.app, prog.components(), created)
	bom.Dependencies = &[]cdx.Dependency{prog.dependency()}
	return seal(bom)
}

// Write encodes bom as indented JSON, with a final newline. Characters such as & in purls
// are written as they are.
func Write(w io.Writer, bom *cdx.BOM) error {
	return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false).Encode(bom)
}

// newBOM is a document about subject holding components, created at created.
func newBOM(subject cdx.Component, components []cdx.Component, created time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.SpecVersion = SpecVersion
	bom.JSONSchema = schemaURL
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Component: &subject,
		Tools:     tools(),
	}
	bom.Components = &components
	return bom
}

// tools names the library that wrote the document, with its version when this program's build
// information has it (a program built by go build or go run has; a test binary does not).
func tools() *cdx.ToolsChoice {
	const path = "github.com/CycloneDX/cyclonedx-go"
	lib := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: path}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				lib.Version, lib.PackageURL = m.Version, purl("golang", path, m.Version)
			}
		}
	}
	return &cdx.ToolsChoice{Components: &[]cdx.Component{lib}}
}

// seal sorts bom's components and dependencies and sets its serial number from its content,
// so that the same content always gives the same bytes and serial number. The serial is a
// UUID in version 5's layout (the only name-based form the schema's pattern admits) whose bits
// are SHA-256's, not SHA-1's.
func seal(bom *cdx.BOM) (*cdx.BOM, error) {
	sortComponents(*bom.Components)
	deps := *bom.Dependencies
	for _, d := range deps {
		slices.Sort(*d.Dependencies)
	}
	slices.SortFunc(deps, func(a, b cdx.Dependency) int { return cmp.Compare(a.Ref, b.Ref) })
	bom.SerialNumber = ""
	var buf bytes.Buffer
	if err := Write(&buf, bom); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(buf.Bytes())
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	bom.SerialNumber = fmt.Sprintf("urn:uuid:%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:32])
	return bom, nil
}

// sortComponents sorts components, and those nested in them, by bom-ref.
func sortComponents(cs []cdx.Component) {
	slices.SortFunc(cs, func(a, b cdx.Component) int { return cmp.Compare(a.BOMRef, b.BOMRef) })
	for _, c := range cs {
		if c.Components != nil {
			sortComponents(*c.Components)
		}
	}
}

// sha256Hash is data's SHA-256 as a CycloneDX hash.
func sha256Hash(data []byte) cdx.Hash {
	sum := sha256.Sum256(data)
	return cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}
}
