package sbom_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
)

// listed is a module as `go version -m` lists it: what the binary links, after replacement.
type listed struct{ path, version, sum string }

// goVersionM is what `go version -m bin` says: the Go version and the modules linked, each
// as it was replaced ("=>" lines); a module replaced by a directory keeps its path and the
// version required of it, and has no hash.
func goVersionM(t *testing.T, bin string) (goVersion string, mods []listed) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	_, goVersion, _ = strings.Cut(lines[0], ": ")
	for _, line := range lines[1:] {
		f := append(strings.Split(strings.TrimSpace(line), "\t"), "", "", "")
		switch {
		case f[0] == "dep":
			mods = append(mods, listed{f[1], f[2], f[3]})
		case f[0] == "=>" && strings.HasPrefix(f[1], "."):
			m := mods[len(mods)-1]
			if strings.HasPrefix(m.version, "v0.0.0-00010101000000-") {
				m.version = ""
			}
			mods[len(mods)-1] = listed{path: m.path, version: m.version}
		case f[0] == "=>":
			mods[len(mods)-1] = listed{f[1], f[2], f[3]}
		}
	}
	if len(mods) == 0 {
		t.Fatalf("go version -m lists no module:\n%s", out)
	}
	return goVersion, mods
}

// checkModules checks that bom has every module `go version -m bin` lists as a library
// component that app depends on, at the version listed (a directory replacement without a
// required version at the release's), with the go.sum hash in hex, and the Go standard
// library too.
func checkModules(t *testing.T, bom *cdx.BOM, bin, app string) {
	t.Helper()
	goVersion, mods := goVersionM(t, bin)
	comps := byRef(bom)
	deps := dependsOn(bom, app)
	for _, m := range mods {
		v := m.version
		if v == "" {
			v = version
		}
		ref := "pkg:golang/" + m.path + "@" + strings.ReplaceAll(v, "+", "%2B")
		c, ok := comps[ref]
		if !ok {
			t.Errorf("module %s %s: no component %s", m.path, v, ref)
			continue
		}
		if c.Name != m.path || c.Version != v || c.Type != cdx.ComponentTypeLibrary {
			t.Errorf("component %s is %s %s %s, want library %s %s", ref, c.Type, c.Name, c.Version, m.path, v)
		}
		if m.sum != "" {
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(m.sum, "h1:"))
			want := []cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(raw)}}
			if c.Hashes == nil || !slices.Equal(*c.Hashes, want) {
				t.Errorf("%s: hashes %v, want %v (go.sum's %s)", ref, c.Hashes, want, m.sum)
			}
		}
		if !slices.Contains(deps, ref) {
			t.Errorf("%s does not depend on %s", app, ref)
		}
	}
	std := "pkg:golang/stdlib@" + strings.TrimPrefix(goVersion, "go")
	if c := comps[std]; c.Name != "stdlib" || c.Version != goVersion || !slices.Contains(deps, std) {
		t.Errorf("the standard library: component %+v, depended on: %v; want stdlib %s", c, slices.Contains(deps, std), goVersion)
	}
	if want := len(mods) + 1; len(deps) != want {
		t.Errorf("%s depends on %d components, want %d (every module and the standard library)", app, len(deps), want)
	}
}

func TestForBinaryListsEveryModuleTheBinaryLinks(t *testing.T) {
	bin := builtBinary(t)
	bom, err := sbom.ForBinary(bin, "kubectl-semaphore", version, created)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := roundTrip(t, bom)
	const app = "pkg:golang/github.com/kube-semaphore/semaphore@" + version + "?type=module"
	main := got.Metadata.Component
	if main == nil || main.BOMRef != app || main.PackageURL != app || main.Type != cdx.ComponentTypeApplication ||
		main.Name != "kubectl-semaphore" || main.Version != version {
		t.Fatalf("the SBOM's subject is %+v, want the application kubectl-semaphore %s, %s", main, version, app)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if c := byRef(got)[app]; c.Hashes == nil || (*c.Hashes)[0].Value != sha256Hex(data) {
		t.Errorf("the application's hashes are %v, want the binary's SHA-256 %s", c.Hashes, sha256Hex(data))
	}
	if got.Metadata.Timestamp != "2026-11-23T22:09:39Z" || got.SpecVersion != cdx.SpecVersion1_6 {
		t.Errorf("timestamp %s, spec %s; want 2026-11-23T22:09:39Z, 1.6", got.Metadata.Timestamp, got.SpecVersion)
	}
	checkModules(t, got, bin, app)
	props := map[string]string{}
	for _, p := range *main.Properties {
		props[p.Name] = p.Value
	}
	if props["cdx:gomod:build:env:GOOS"] != "linux" || props["cdx:gomod:build:env:CGO_ENABLED"] != "0" {
		t.Errorf("build properties %v: want GOOS linux and CGO_ENABLED 0", props)
	}
}

// TestForBinaryListsReplacementsAsReplaced builds a module of its own that replaces go-cmp by
// another version and two modules by directories: a copy of a version it requires
// (example.com/copied v0.1.0, listed at v0.1.0 with a pedigree note, so that scanners match that
// version's advisories), and a module required at the zero pseudo-version (listed at the
// release's version).
func TestForBinaryListsReplacementsAsReplaced(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/prog\n\ngo 1.24\n\nrequire (\n\tgithub.com/google/go-cmp v0.6.0\n\texample.com/copied v0.1.0\n\texample.com/local v0.0.0-00010101000000-000000000000\n)\n\n" +
			"replace github.com/google/go-cmp => github.com/google/go-cmp v0.7.0\n\nreplace example.com/copied => ./copied\n\nreplace example.com/local => ./local\n",
		"main.go":          "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/copied\"\n\t\"example.com/local\"\n\t\"github.com/google/go-cmp/cmp\"\n)\n\nfunc main() { fmt.Println(cmp.Diff(local.A, copied.B)) }\n",
		"copied/go.mod":    "module example.com/copied\n\ngo 1.24\n",
		"copied/copied.go": "package copied\n\nconst B = 2\n",
		"local/go.mod":     "module example.com/local\n\ngo 1.24\n",
		"local/local.go":   "package local\n\nconst A = 1\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	// go-cmp v0.7.0 is one of our own dependencies, so in the module cache: no sum database.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off", "GOSUMDB=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bom, err := sbom.ForBinary(bin, "prog", version, created)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := roundTrip(t, bom)
	app := "pkg:golang/example.com/prog@" + version + "?type=module"
	checkModules(t, got, bin, app)
	comps := byRef(got)
	for _, ref := range []string{"pkg:golang/github.com/google/go-cmp@v0.7.0", "pkg:golang/example.com/copied@v0.1.0", "pkg:golang/example.com/local@" + version} {
		if _, ok := comps[ref]; !ok {
			t.Errorf("no component %s", ref)
		}
	}
	if c := comps["pkg:golang/example.com/copied@v0.1.0"]; c.Pedigree == nil || !strings.Contains(c.Pedigree.Notes, "./copied") {
		t.Errorf("the copy example.com/copied has pedigree %+v, want a note naming ./copied", c.Pedigree)
	}
	if c := comps["pkg:golang/github.com/google/go-cmp@v0.7.0"]; c.Pedigree != nil {
		t.Errorf("go-cmp, replaced by another version, has pedigree %+v, want none", c.Pedigree)
	}
	if _, ok := comps["pkg:golang/github.com/google/go-cmp@v0.6.0"]; ok {
		t.Error("go-cmp is listed at v0.6.0, the version replaced")
	}
}

func TestDebianPackageVersion(t *testing.T) {
	ctx := context.Background()
	if v, err := sbom.DebianPackageVersion(ctx, "no-such-package-here"); err != nil || v != "" {
		t.Errorf("a package that is not installed: %q, %v; want \"\", nil", v, err)
	}
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("no dpkg-query: not Debian or Ubuntu")
	}
	want, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "dpkg").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := sbom.DebianPackageVersion(ctx, "dpkg"); err != nil || v != string(want) {
		t.Errorf("dpkg: %q, %v; want %q", v, err, want)
	}
}
