// Command conformance runs the upstream MCS conformance suite (third_party/mcs-api-conformance)
// against the running lab; `make conformance` runs it through ci/conformance.sh, which brings
// the lab up first when none runs:
//
//	conformance [-lab DIR] [-out DIR] [-labels FILTER] [-clusters aws,gcp]... [-wait D] [-lab-pid PID] [-- SUITE FLAGS]
//
// It waits up to -wait for the lab in -lab to be up, pushes the two images the suite's pods
// run into the lab's registry (lab/conformance), compiles the suite, and runs it once per
// -clusters (by default aws,gcp, then aws,gcp,merit: contexts of the lab's kubeconfig, whose
// API servers are on this machine's loopback), each run writing the suite's reports into
// OUT/<n>-clusters/ (report.html, report.yaml, ginkgo-report.json, and its output in suite.log),
// and prints what each report says. -labels is ginkgo's label filter: "Required" runs only the
// specs every implementation must pass. It exits 0 when every run passed, 1 otherwise, 2 on
// a bad command line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// clusterSets is the repeatable -clusters flag.
type clusterSets [][]string

func (c *clusterSets) String() string { return fmt.Sprint([][]string(*c)) }

func (c *clusterSets) Set(s string) error {
	*c = append(*c, strings.Split(s, ","))
	return nil
}

// options are the command line's.
type options struct {
	lab, out, labels string
	sets             clusterSets
	wait             time.Duration
	labPID           int
	suiteArgs        []string
}

func run(args []string) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.lab, "lab", filepath.Join(testbed.RepoRoot(), ".lab"), "the lab `directory`")
	fs.StringVar(&o.out, "out", "", "where the reports go, a `directory` per run (default LAB/conformance)")
	fs.StringVar(&o.labels, "labels", "", "ginkgo's label `filter` (Required: only the specs every implementation must pass); all specs when empty")
	fs.Var(&o.sets, "clusters", "comma-separated `contexts` of a run, the first exporting (repeatable; default aws,gcp and aws,gcp,merit)")
	fs.DurationVar(&o.wait, "wait", 0, "how long to wait for the lab to be up (0: it must be up already)")
	fs.IntVar(&o.labPID, "lab-pid", 0, "the `pid` bringing the lab up: waiting ends when it exits")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.suiteArgs = fs.Args()
	if len(o.sets) == 0 {
		o.sets = clusterSets{{"aws", "gcp"}, {"aws", "gcp", "merit"}}
	}
	if o.out == "" {
		o.out = filepath.Join(o.lab, "conformance")
	}
	if err := runSuite(o); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		return 1
	}
	return 0
}
