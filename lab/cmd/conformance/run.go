package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
	"github.com/kube-semaphore/semaphore/lab/conformance"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// runSuite waits for the lab, pushes the images, builds the suite and runs it per cluster set,
// until SIGINT or SIGTERM.
func runSuite(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rec, err := waitForLab(ctx, o.lab, o.wait, o.labPID)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := conformance.PushImages(ctx, rec.Registry, os.Stderr); err != nil {
		return err
	}
	logf("pushed %s and %s to the lab's registry %s (%s)", conformance.SocatImage, conformance.NetshootImage, rec.Registry, since(start))
	start = time.Now()
	// Semaphore's version, for the reports: as `make build` and the images have it.
	opts, err := images.DefaultOptions(ctx, testbed.RepoRoot())
	if err != nil {
		return err
	}
	binary := filepath.Join(o.out, "mcs-conformance.test")
	if err := conformance.BuildSuite(ctx, binary); err != nil {
		return err
	}
	logf("compiled the suite into %s (%s)", binary, since(start))
	var failed []string
	for _, set := range o.sets {
		dir := filepath.Join(o.out, fmt.Sprintf("%d-clusters", len(set)))
		r := conformance.Run{
			Binary: binary, Kubeconfig: rec.Kubeconfig, Contexts: set, LabelFilter: o.labels,
			Version: opts.Version, Dir: dir, Args: o.suiteArgs,
		}
		logf("running the suite against %s (labels %q); its output goes to %s", strings.Join(set, ","), o.labels, filepath.Join(dir, "suite.log"))
		start = time.Now()
		err := r.Exec(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		printReport(dir, since(start))
		if err != nil {
			failed = append(failed, strings.Join(set, ","))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the suite failed against %s", strings.Join(failed, "; "))
	}
	return nil
}

// waitForLab returns the record of the lab in dir once it is up, waiting up to wait. It fails
// at once when the lab stops (after it ran, or when the process labPID, bringing it up,
// exits).
func waitForLab(ctx context.Context, dir string, wait time.Duration, labPID int) (*layout.Record, error) {
	deadline := time.Now().Add(wait)
	seen := false
	for {
		_, rec, ok, err := layout.Running(dir)
		switch {
		case err != nil:
			return nil, err
		case ok && rec != nil && rec.Phase == layout.PhaseUp:
			return rec, nil
		case ok:
			seen = true
		case seen:
			return nil, fmt.Errorf("the lab in %s stopped before it was up", dir)
		case labPID > 0 && syscall.Kill(labPID, 0) != nil:
			return nil, fmt.Errorf("the lab did not start (pid %d exited)", labPID)
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("no lab up in %s (waited %s): `make lab` brings one up", dir, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// printReport prints what the suite's report in dir says.
func printReport(dir, took string) {
	r, err := conformance.ReadReport(dir)
	if err != nil {
		logf("no report (%v); see %s", err, filepath.Join(dir, "suite.log"))
		return
	}
	var lines []string
	skipped := 0
	for _, g := range r.Groups {
		for _, t := range g.Tests {
			result := "PASSED"
			switch {
			case t.Skipped:
				result = "skipped"
				skipped++
			case t.Failed:
				result = "FAILED"
			case !t.Conformant:
				result = "NOT CONFORMANT"
			}
			lines = append(lines, fmt.Sprintf("  %-8s %-14s %s%s", g.Name, result, t.Desc, t.Message))
		}
	}
	logf("%d of %d specs passed, %d skipped, in %s; the report: %s", r.Passed, r.Total, skipped, took, filepath.Join(dir, "report.html"))
	if r.SuiteFailure != "" {
		fmt.Printf("  setup failed: %s\n", r.SuiteFailure)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

func logf(format string, args ...any) {
	fmt.Printf("conformance: "+format+"\n", args...)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
