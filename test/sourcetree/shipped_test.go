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

// notShipped are the repository's packages (with their subpackages) that serve its tests or its release, never its
// users: the test harness (real API servers, network namespaces, the fixtures they share) and
// the tooling that builds, signs and describes a release. A shipped program that linked one
// would carry test or build code, and whatever it imports, into every image.
var notShipped = []string{
	"internal/testbed", "internal/testenv", "internal/netnstopo",
	"internal/images", "internal/sbom", "internal/signing", "internal/dist",
	"internal/helmchart", "internal/mixin", "internal/citool",
}

// notShippedTrees are the folders whose every package is the lab's, the build's or a test's.
var notShippedTrees = []string{"lab/", "hack/", "test/"}

// The programs Semaphore ships link neither the test harness nor the release tooling, nor the
// standard library's testing package, nor a fake (a package whose name ends in "test", as
// devicetest): the compiler would let them, and the images would grow by what those import.
func TestShippedProgramsLinkNoTestHarnessNorReleaseTooling(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	cmd := exec.Command("go", append([]string{"list", "-deps"}, shipped...)...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/daemon") {
		t.Fatalf("go list -deps did not list the components' skeleton; it printed %d packages", len(deps))
	}
	for _, dep := range deps {
		if why := notForShipping(dep); why != "" {
			t.Errorf("a shipped program links %s: %s", dep, why)
		}
	}
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
	case slices.ContainsFunc(notShipped, func(p string) bool { return rel == p || strings.HasPrefix(rel, p+"/") }):
		return "test harness or release tooling"
	case slices.ContainsFunc(notShippedTrees, func(tree string) bool { return strings.HasPrefix(rel, tree) }):
		return "the lab's, the build's or a test's"
	case strings.HasSuffix(path.Base(rel), "test"):
		return "a fake, for tests"
	}
	return ""
}

// The rule itself, on names: what it keeps out and what it lets through.
func TestNotForShippingNamesTheHarnessTheToolingAndFakes(t *testing.T) {
	for pkg, out := range map[string]bool{
		"testing":                                         true,
		"testing/fstest":                                  true,
		module + "internal/testenv":                       true,
		module + "internal/testenv/fixture":               true,
		module + "internal/sbom":                          true,
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
