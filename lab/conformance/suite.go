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

func (r Run) args() []string {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	args := []string{
		"-kubeconfig=" + r.Kubeconfig,
		"-contexts=" + strings.Join(r.Contexts, ","),
		"-organization=" + organization,
		"-project=" + project,
		"-version=" + r.Version,
		"-url=" + projectURL,
		// ginkgo bounds the run, not go test's default 10 minutes.
		"-test.timeout=0",
		"-ginkgo.timeout=" + timeout.String(),
		"-ginkgo.v",
		"-ginkgo.no-color",
		"-ginkgo.json-report=ginkgo-report.json",
	}
	if r.LabelFilter != "" {
		args = append(args, "-ginkgo.label-filter="+r.LabelFilter)
	}
	return append(args, r.Args...)
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
