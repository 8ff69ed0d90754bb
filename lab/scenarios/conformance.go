package scenarios

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/lab/conformance"
	"github.com/kube-semaphore/semaphore/lab/env"
)

// conformanceClusters are the clusters the Required specs run against in `lab check`: the
// first exports. `make conformance` runs every spec against two and three clusters.
var conformanceClusters = []string{"aws", "gcp"}

// checkConformance runs the Required specs of the upstream MCS conformance suite against the
// lab's service mirrors, as `CONFORMANCE_LABELS=Required make conformance` does for two
// clusters; any failure is a problem. Its reports go to <lab>/conformance/check/.
func checkConformance(ctx context.Context, l *env.Lab) []string {
	rec := l.Record()
	fmt.Fprintf(l.Out(), "The MCS conformance suite's Required specs against %v\n", conformanceClusters)
	if rec.NodesSkipped() {
		fmt.Fprintf(l.Out(), "  skipped: %s\n", rec.Nodes.Skipped)
		return nil
	}
	start := time.Now()
	dir := l.Path("conformance", "check")
	if err := conformance.PushImages(ctx, rec.Registry, nil); err != nil {
		return []string{fmt.Sprintf("conformance: pushing the suite's images: %v", err)}
	}
	opts, err := images.DefaultOptions(ctx, testbed.RepoRoot())
	if err != nil {
		return []string{fmt.Sprintf("conformance: %v", err)}
	}
	binary := filepath.Join(dir, "mcs-conformance.test")
	if err := conformance.BuildSuite(ctx, binary); err != nil {
		return []string{fmt.Sprintf("conformance: %v", err)}
	}
	run := conformance.Run{Binary: binary, Kubeconfig: rec.Kubeconfig, Contexts: conformanceClusters, LabelFilter: "Required",
		Version: opts.Version, Dir: dir, Timeout: 15 * time.Minute}
	runErr := run.Exec(ctx)
	if err := waitForSuiteNamespaces(ctx, l); err != nil {
		runErr = errors.Join(runErr, err)
	}
	report, err := conformance.ReadReport(dir)
	if err != nil {
		return []string{fmt.Sprintf("conformance: %v; %v", runErr, err)}
	}
	var problems []string
	ran, passed := 0, 0
	for _, g := range report.Groups {
		for _, tc := range g.Tests {
			if tc.Skipped {
				continue
			}
			ran++
			if tc.Passed {
				passed++
			}
			if tc.Failed || !tc.Conformant {
				problems = append(problems, fmt.Sprintf("conformance: %s: %s", tc.Desc, tc.Message))
			}
		}
	}
	fmt.Fprintf(l.Out(), "  %d of %d Required specs passed in %s, the suite compiled and its images pushed included (report: %s)\n",
		passed, ran, time.Since(start).Round(time.Second), filepath.Join(dir, "report.html"))
	if runErr != nil && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("conformance: %v", runErr))
	}
	return problems
}

// waitForSuiteNamespaces waits until the suite's namespaces are gone from the clusters it ran
// against, so that the scenarios after it (kubectl semaphore check among them) see none of its
// exports.
func waitForSuiteNamespaces(ctx context.Context, l *env.Lab) error {
	var clients []kubernetes.Interface
	for _, name := range conformanceClusters {
		clients = append(clients, l.Cluster(name).Client)
	}
	return conformance.WaitForNamespacesGone(ctx, clients, 2*time.Minute)
}
