package sbom

import (
	"bytes"
	"cmp"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// program is what a Go binary's build information says: the program as an application
// component, and the modules and standard library linked into it.
type program struct {
	app  cdx.Component
	deps []cdx.Component
}

// readProgram reads the build information of the Go binary data, released as name at version.
func readProgram(data []byte, name, version string) (program, error) {
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return program{}, err
	}
	if info.Main.Path == "" {
		return program{}, fmt.Errorf("no main module in the build information (built outside module mode?)")
	}
	app := cdx.Component{
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    version,
		PackageURL: purl("golang", info.Main.Path, version, "type", "module"),
		Hashes:     &[]cdx.Hash{sha256Hash(data)},
		Properties: buildProperties(name, info),
	}
	app.BOMRef = app.PackageURL
	deps := []cdx.Component{stdlib(info.GoVersion)}
	for _, m := range info.Deps {
		deps = append(deps, moduleComponent(m, version))
	}
	return program{app: app, deps: deps}, nil
}

// components are the program and what it links.
func (p program) components() []cdx.Component { return append([]cdx.Component{p.app}, p.deps...) }

// dependency says that the program depends on every module and the standard library.
func (p program) dependency() cdx.Dependency {
	refs := make([]string, 0, len(p.deps))
	for _, d := range p.deps {
		refs = append(refs, d.BOMRef)
	}
	return cdx.Dependency{Ref: p.app.BOMRef, Dependencies: &refs}
}

// moduleComponent is the library component of a module the binary links: the replacement when
// the module is replaced, with its go.sum hash ("h1:" and base64 of a SHA-256, written in hex
// as cyclonedx-gomod does). A module replaced by a directory ships in the main module's source
// tree: it keeps its path and the version go.mod requires, as a copy of that version (so that
// scanners match the upstream version's advisories), with no hash and a pedigree note saying
// where the copy is; without a required version (a placeholder) it gets the release's.
func moduleComponent(m *debug.Module, version string) cdx.Component {
	var pedigree *cdx.Pedigree
	if r := m.Replace; r != nil {
		if isDirectory(r.Path) {
			if isPlaceholder(m.Version) {
				m = &debug.Module{Path: m.Path, Version: version}
			} else {
				m = &debug.Module{Path: m.Path, Version: m.Version}
			}
			pedigree = &cdx.Pedigree{Notes: "a copy in the release's source tree, " + r.Path + ", which may carry changes its README lists"}
		} else {
			m = r
		}
	}
	c := cdx.Component{
		Type:       cdx.ComponentTypeLibrary,
		Name:       m.Path,
		Version:    m.Version,
		Scope:      cdx.ScopeRequired,
		PackageURL: purl("golang", m.Path, m.Version),
	}
	c.BOMRef = c.PackageURL
	c.Pedigree = pedigree
	if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		if sum, err := base64.StdEncoding.DecodeString(h); err == nil {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum)}}
		}
	}
	return c
}

// isPlaceholder says whether a required version names no release: empty, "(devel)", or the
// zero pseudo-version that go.mod files give a module only ever used through a replacement.
func isPlaceholder(v string) bool {
	return v == "" || v == "(devel)" || strings.HasPrefix(v, "v0.0.0-00010101000000-")
}

// isDirectory says whether a replacement's path is a directory (./local, /src/x, C:\src\x)
// rather than a module path, which never starts with a dot or a slash.
func isDirectory(p string) bool {
	return strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/") || filepath.VolumeName(p) != ""
}

// stdlib is the Go standard library (and runtime) the binary was built with: named and
// versioned as syft does ("stdlib", "go1.26.8", pkg:golang/stdlib@1.26.8), which vulnerability
// scanners such as grype match against the Go vulnerability database.
func stdlib(goVersion string) cdx.Component {
	v, _, _ := strings.Cut(goVersion, " ") // "go1.26.8 X:nodwarf5" has experiments after a space
	c := cdx.Component{
		Type:       cdx.ComponentTypeLibrary,
		Name:       "stdlib",
		Version:    v,
		Scope:      cdx.ScopeRequired,
		PackageURL: purl("golang", "stdlib", strings.TrimPrefix(v, "go")),
	}
	c.BOMRef = c.PackageURL
	return c
}

// buildProperties are the build settings worth knowing, named as in the CycloneDX property
// taxonomy's cdx:gomod namespace (cyclonedx-gomod's names), sorted by name.
func buildProperties(name string, info *debug.BuildInfo) *[]cdx.Property {
	props := []cdx.Property{
		{Name: "cdx:gomod:binary:name", Value: name},
		{Name: "cdx:gomod:build:env:GOVERSION", Value: info.GoVersion},
	}
	names := map[string]string{
		"CGO_ENABLED": "cdx:gomod:build:env:CGO_ENABLED",
		"GOARCH":      "cdx:gomod:build:env:GOARCH",
		"GOOS":        "cdx:gomod:build:env:GOOS",
		"-compiler":   "cdx:gomod:build:compiler",
	}
	for _, s := range info.Settings {
		if n, ok := names[s.Key]; ok {
			props = append(props, cdx.Property{Name: n, Value: s.Value})
		}
		if s.Key == "-tags" {
			for tag := range strings.SplitSeq(s.Value, ",") {
				props = append(props, cdx.Property{Name: "cdx:gomod:build:tag", Value: tag})
			}
		}
	}
	slices.SortStableFunc(props, func(a, b cdx.Property) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Value, b.Value))
	})
	return &props
}
