package sourcetree_test

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the path every package of the repository starts with.
const module = "github.com/kube-semaphore/semaphore/"

// notShippedTrees are the folders whose every package serves the repository's tests or its
// release, never its users: the test harness (real API servers, network namespaces, the fixtures
// they share), the tooling that builds, signs and describes a release, and the lab's, the build's
// and the suites' own folders. A shipped program that linked one would carry test or build code,
// and whatever it imports, into every image.
var notShippedTrees = []string{"internal/harness/", "internal/tooling/", "lab/", "hack/", "test/"}

// The programs Semaphore ships link neither the test harness nor the release tooling, nor the
// standard library's testing package, nor a fake (a package whose name ends in "test", as
// devicetest): the compiler would let them, and the images would grow by what those import.
func TestShippedProgramsLinkNoTestHarnessNorReleaseTooling(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	deps := goList(t, append([]string{"-deps"}, shipped...)...)
	if !slices.Contains(deps, module+"internal/daemon") {
		t.Fatalf("go list -deps did not list the components' skeleton; it printed %d packages", len(deps))
	}
	for _, dep := range deps {
		if why := notForShipping(dep); why != "" {
			t.Errorf("a shipped program links %s: %s", dep, why)
		}
	}
}

// internal/ shows who uses each package by where it stands: on its first floor only what a
// shipped program links (and that package's fakes), with the harness and the tooling in their
// own folders. A package that serves only tests or the release, left on the first floor, reads
// to a newcomer as product code; this says where it belongs instead.
func TestInternalPackagesOutsideHarnessAndToolingAreShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	linked := map[string]bool{}
	for _, dep := range goList(t, append([]string{"-deps"}, shipped...)...) {
		linked[dep] = true
	}
	internal := goList(t, "./internal/...")
	if len(internal) < 10 {
		t.Fatalf("go list ./internal/... printed %d packages", len(internal))
	}
	for _, pkg := range internal {
		if notForShipping(pkg) == "" && !linked[pkg] {
			t.Errorf("%s is linked by no shipped program: move it next to its only user, or under internal/harness/ (tests) or internal/tooling/ (release)", pkg)
		}
	}
}

// goList runs go list with args in the module root and returns the packages it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// notForShipping says why package pkg has no place in a shipped program ("" when it has one).
func notForShipping(pkg string) string {
	if pkg == "testing" || strings.HasPrefix(pkg, "testing/") {
		return "the standard library's test support"
	}
	rel, ours := strings.CutPrefix(pkg, module)
	switch {
	case !ours:
		return ""
	case slices.ContainsFunc(notShippedTrees, func(tree string) bool { return strings.HasPrefix(rel+"/", tree) }):
		return "test harness, release tooling, or the lab's, the build's or a suite's"
	case strings.HasSuffix(path.Base(rel), "test"):
		return "a fake, for tests"
	}
	return ""
}

// The rule itself, on names: what it keeps out and what it lets through.
func TestNotForShippingNamesTheHarnessTheToolingAndFakes(t *testing.T) {
	for pkg, out := range map[string]bool{
		"testing":                           true,
		"testing/fstest":                    true,
		module + "internal/harness/testenv": true,
		module + "internal/harness/testenv/fixture":       true,
		module + "internal/tooling/sbom":                  true,
		module + "lab/env":                                true,
		module + "hack/chartschema":                       true,
		module + "test/charts":                            true,
		module + "components/wireguard/device/devicetest": true,
		module + "internal/daemon":                        false,
		module + "internal/testenvironment":               false,
		module + "internal/promtext":                      false,
		"k8s.io/client-go/testing":                        false,
		"net/http":                                        false,
	} {
		if got := notForShipping(pkg) != ""; got != out {
			t.Errorf("notForShipping(%q) != \"\" is %v, want %v", pkg, got, out)
		}
	}
}
