package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// suitePackage is the suite's package; go.mod replaces its module with
// third_party/mcs-api-conformance.
const suitePackage = "sigs.k8s.io/mcs-api/conformance"

// What the suite's report says of the implementation under test.
const (
	organization = "kube-semaphore"
	project      = "Semaphore"
	projectURL   = "https://github.com/kube-semaphore/semaphore"
)

// BuildSuite compiles the suite into the test binary out (`go test -c`), in this module, so
// with go.mod's versions of its dependencies.
func BuildSuite(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, suitePackage)
	cmd.Dir = testbed.RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c %s: %w\n%s", suitePackage, err, output)
	}
	return nil
}

// ginkgoPackage is ginkgo's CLI, at the version go.mod gives the suite's ginkgo library: the
// CLI refuses to drive a suite built with another version.
const ginkgoPackage = "github.com/onsi/ginkgo/v2/ginkgo"

// BuildGinkgo builds ginkgo's CLI into out, which runs a compiled suite's specs side by side
// (Run.Procs): the test binary alone runs them one after another.
func BuildGinkgo(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ginkgoPackage)
	cmd.Dir = testbed.RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", ginkgoPackage, err, output)
	}
	return nil
}

// Run is one run of the suite's binary against some of the lab's clusters.
type Run struct {
	// Binary is the suite's test binary (BuildSuite).
	Binary string
	// Kubeconfig has a context per cluster; Contexts are those the suite runs against, the
	// first being the one it exports from.
	Kubeconfig string
	Contexts   []string
	// LabelFilter is ginkgo's label filter ("Required": the specs every implementation must
	// pass), "" for every spec.
	LabelFilter string
	// Version is Semaphore's version, for the report.
	Version string
	// Dir is where the suite writes its reports (report.html, report.yaml: it writes them to
	// its working directory), ginkgo's JSON report (ginkgo-report.json) and its output
	// (suite.log).
	Dir string
	// Timeout bounds the whole run (ginkgo's -ginkgo.timeout).
	Timeout time.Duration
	// Args go to the suite after the others (-ginkgo.focus=..., -dns-domain=...).
	Args []string
	// Output, when set, receives the suite's output too.
	Output io.Writer
	// Ginkgo is ginkgo's CLI (BuildGinkgo), and Procs how many processes it runs the specs in;
	// with Procs under 2 the binary runs alone, one spec after another. Each spec has a
	// namespace of its own, and each process its own clients.
	Ginkgo string
	Procs  int
}

// Exec runs the suite, and fails when it fails: a spec, or its setup (which checks that
// ServiceExports and ServiceImports can be listed in every cluster).
func (r Run) Exec(ctx context.Context) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(r.Dir, "suite.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, r.Binary, r.args()...)
	if r.Procs > 1 {
		cmd = exec.CommandContext(ctx, r.Ginkgo, r.parallelArgs()...)
	}
	cmd.Dir = r.Dir
	cmd.Stdout = log
	if r.Output != nil {
		cmd.Stdout = io.MultiWriter(log, r.Output)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the suite against %s: %w (its output: %s)", strings.Join(r.Contexts, ","), err, log.Name())
	}
	return nil
}

// args are the test binary's: the suite's flags, then ginkgo's as the binary spells them.
func (r Run) args() []string {
	// ginkgo bounds the run, not go test's default 10 minutes.
	args := append(r.suiteFlags(), "-test.timeout=0")
	for _, f := range r.ginkgoFlags() {
		args = append(args, "-ginkgo."+f)
	}
	return append(args, r.Args...)
}

// parallelArgs are ginkgo CLI's, running the binary in Procs processes: its flags, the binary,
// then the suite's flags after "--".
func (r Run) parallelArgs() []string {
	args := []string{"run", fmt.Sprintf("--procs=%d", r.Procs)}
	for _, f := range r.ginkgoFlags() {
		args = append(args, "--"+f)
	}
	args = append(args, r.Binary, "--")
	args = append(args, r.suiteFlags()...)
	return append(args, r.Args...)
}

// suiteFlags are the suite's own flags: the clusters, and Semaphore named in its report.
func (r Run) suiteFlags() []string {
	return []string{
		"-kubeconfig=" + r.Kubeconfig,
		"-contexts=" + strings.Join(r.Contexts, ","),
		"-organization=" + organization,
		"-project=" + project,
		"-version=" + r.Version,
		"-url=" + projectURL,
	}
}

// ginkgoFlags are ginkgo's flags without their prefix ("-ginkgo." for the binary, "--" for the
// CLI).
func (r Run) ginkgoFlags() []string {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	flags := []string{"timeout=" + timeout.String(), "v", "no-color", "json-report=ginkgo-report.json"}
	if r.LabelFilter != "" {
		flags = append(flags, "label-filter="+r.LabelFilter)
	}
	return flags
}

// Report is what the suite's report.yaml says, in part.
type Report struct {
	Passed, Total int
	SuiteFailure  string
	Groups        []struct {
		Name  string
		Tests []struct {
			Desc                                string
			Passed, Failed, Skipped, Conformant bool
			Message                             string
		}
	}
}

// ReadReport reads the report.yaml a run wrote in dir.
func ReadReport(dir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, "report.yaml"))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "report.yaml"), err)
	}
	return &r, nil
}

// NamespacePrefix starts the name of every namespace the suite creates, one per spec; it deletes
// each after its spec, and the namespace controller removes what the spec left in it.
const NamespacePrefix = "mcs-conformance-"

// WaitForNamespacesGone waits, up to timeout, until no cluster of clients has a namespace of the
// suite any more: until then its ServiceExports (an ExternalName one among them) are still
// there, half deleted, for whatever runs next to see.
func WaitForNamespacesGone(ctx context.Context, clients []kubernetes.Interface, timeout time.Duration) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		left = nil
		for _, c := range clients {
			list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // the API server busy: asked again
			}
			for _, ns := range list.Items {
				if strings.HasPrefix(ns.Name, NamespacePrefix) {
					left = append(left, ns.Name)
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the suite's namespaces %v are still there after %s", left, timeout)
	}
	return nil
}
