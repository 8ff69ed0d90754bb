package testbed

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/kube-semaphore/semaphore/internal/tooling/citool"
)

// RepoRoot is the root of this repository.
func RepoRoot() string {
	return filepath.Join(packageDir(), "..", "..", "..")
}

// packageDir is this package's directory in the source tree, which its testdata is under.
func packageDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when set,
// else what ci/kube-binaries.sh builds (once per process) or finds in its cache.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	return kubeBinaries()
}

// CoreDNSBinary returns the path of a CoreDNS binary with the plugins a Kubernetes Corefile
// uses, building it with ci/coredns.sh (once per process) when it is not cached yet.
func CoreDNSBinary() (string, error) { return coreDNSBinary() }

var (
	kubeBinaries  = ciTool("kube-binaries.sh")
	coreDNSBinary = ciTool("coredns.sh")
)

// ciTool returns a function that runs the script ci/<script> once per process and returns the
// last line it prints: the path of what it built, or found in its cache. The script's progress
// goes to stderr, as building can take minutes.
func ciTool(script string) func() (string, error) {
	return sync.OnceValues(func() (string, error) { return CIToolPath(os.Stderr, script) })
}

// CIToolPath runs the script ci/<script> with args and returns the last line it prints: the
// path of what it built, or found in its cache. The script's progress goes to stderr (nil
// drops it).
func CIToolPath(stderr io.Writer, script string, args ...string) (string, error) {
	return citool.Path(stderr, RepoRoot(), script, args...)
}

// BuildBinary builds the command pkg (an import path) into dir, statically (CGO_ENABLED=0), as
// the images have it, and returns the binary's path.
func BuildBinary(pkg, dir string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}
