// Command lab runs the local lab: three real Kubernetes clusters on this machine (etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler each; as root, nodes running
// containerd, kubelet and kube-proxy in network namespaces, see lab/node), our images and
// charts in a registry on loopback, semaphore-remote and the umbrella chart installed with the
// helm CLI, the sample workloads of the Semaphore blog post, each cluster's CoreDNS with the
// Corefile of docs/coredns.md, and Prometheus with the alert rules. `make lab` runs it through
// ci/lab; docs/lab.md describes it.
//
//	lab [-dir DIR] [up]   bring the lab up, print its status, run until SIGINT/SIGTERM, tear down
//	lab [-dir DIR] down   stop the running lab (from another terminal)
//	lab [-dir DIR] status print the status of the running lab
//	lab [-dir DIR] [-run RE] [-count N] check  bring the lab up, check what it prints (the
//	                      scenarios whose names match RE, N times over), tear it down; exit 0 or 1
//	lab [-dir DIR] [-duration D] soak  bring the lab up, churn it for D, check it, tear it down
//
// This file holds the flags and the run loop only: lab/env brings the lab up and takes it
// down, lab/status shows it and waits for it to be ready, and lab/scenarios holds what check
// and soak do to it. Without root the lab runs without the nodes, and so without pods, and
// says why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/scenarios"
	"github.com/kube-semaphore/semaphore/lab/scenarios/hostile"
	"github.com/kube-semaphore/semaphore/lab/status"
)

const usage = `Usage: bash ci/lab [flags] [command]

Commands:
  up      bring the lab up, print its status, run until Ctrl-C (or "down"), tear it down (default)
  down    stop the running lab
  status  print the status of the running lab (exit 1 when it is not running or not healthy)
  check   bring the lab up, check that it works, tear it down; exit 0 when it works, 1 otherwise
          (-run picks scenarios by name, -count repeats them: -run 'hostile' -count 10)
  soak    bring the lab up, churn it for -duration (changes, remote cuts, controller pods
          deleted), check the mesh, footprint and alerts afterwards, tear it down; exit 0 or 1

Flags:
`

func main() {
	os.Exit(run(os.Args[1:]))
}

// options are what the flags say of a run that brings a lab up.
type options struct {
	dir       string
	timeout   time.Duration
	withNodes bool
	// job names the run that checks the lab ("lab check", "lab soak"), "" for up; scenarios
	// are what it runs once the lab is up.
	job       string
	scenarios []scenarios.Scenario
}

func run(args []string) int {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join(testbed.RepoRoot(), ".lab"), "lab `directory`: runtime state, kubeconfigs, logs")
	nodes := fs.Bool("nodes", true, "run the nodes (network namespaces with semaphore-wireguard and the ping), which need root; false runs the control-plane part only")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long up and check wait for the lab to work once everything has started")
	duration := fs.Duration("duration", 10*time.Minute, "how long soak churns the lab")
	runOnly := fs.String("run", "", "check: run only the scenarios whose names match this `regexp` (unanchored, as go test -run)")
	count := fs.Int("count", 1, "check: run the scenarios this many times on one bring-up, stopping at the first that fails")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	command, rest := "up", []string(nil)
	if fs.NArg() > 0 {
		command, rest = fs.Arg(0), fs.Args()[1:]
	}
	if command == hostile.FloodCommand {
		return hostile.Flood(fs.Args()[1:])
	}
	if len(rest) > 0 && command != env.ReaperCommand {
		fs.Usage()
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	// envtest logs through controller-runtime, which complains (with a stack trace) when no
	// logger was set; klog prints its errors and drops its chatter.
	ctrllog.SetLogger(klog.NewKlogr())
	// Helm's chart loader logs through the standard logger every symbolic link it follows
	// (each chart's charts/common), which says nothing about the lab.
	log.SetOutput(io.Discard)

	opts := options{dir: abs, timeout: *timeout, withNodes: *nodes}
	switch command {
	case "up":
		return up(opts)
	case "check":
		list, err := scenarios.Select(scenarios.All, *runOnly, *count)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
			return 2
		}
		opts.job, opts.scenarios = "lab check", list
		return up(opts)
	case "soak":
		if *duration <= 0 {
			fmt.Fprintf(os.Stderr, "lab: -duration must be positive, got %s\n", *duration)
			return 2
		}
		opts.job, opts.scenarios = "lab soak", scenarios.Soak(*duration)
		return up(opts)
	case "down":
		return env.Down(abs)
	case "status":
		return status.Show(context.Background(), abs)
	case env.ReaperCommand:
		return env.Reap(abs, rest)
	default:
		fmt.Fprintf(os.Stderr, "lab: unknown command %q\n\n", command)
		fs.Usage()
		return 2
	}
}

// up brings the lab up and prints its status. With a job (check, soak) it runs the job's
// scenarios, tears the lab down and reports whether everything worked, nothing left behind
// included; otherwise it keeps the lab running until a signal.
func up(opts options) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	l, err := env.New(opts.dir, os.Stdout, opts.withNodes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	defer l.Teardown() // also on a panic; it runs once
	before := env.MachineNow()

	failed := runLab(ctx, l, opts)
	l.Teardown()
	if opts.job == "" {
		return exitCode(failed)
	}
	// Down means gone: no process, network namespace or host link of the lab is left.
	if left := env.LeftBehind(opts.dir, before); len(left) > 0 {
		status.PrintProblems(l.Out(), left)
		failed = append(failed, left...)
	} else {
		fmt.Fprintf(l.Out(), "%s: nothing left behind (processes, network namespaces, cgroups, links, mounts, BPF files, ipsets, nftables tables, iptables rules, sysctls, runtime files)\n", opts.job)
	}
	return verdict(l.Out(), opts.job, l.Elapsed(), failed)
}

// verdict prints whether job passed and returns its exit code. What failed is said again, last:
// the logs' tails printed before push the first report out of what a CI system keeps of a long
// output, its end.
func verdict(w io.Writer, job, elapsed string, failed []string) int {
	if len(failed) == 0 {
		fmt.Fprintf(w, "%s: PASSED in %s\n", job, elapsed)
		return 0
	}
	fmt.Fprintf(w, "%s: FAILED after %s:\n", job, elapsed)
	for _, p := range failed {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	return 1
}

// exitCode is the lab's exit code for what failed: 1 when anything did.
func exitCode(failed []string) int {
	if len(failed) > 0 {
		return 1
	}
	return 0
}

// runLab brings the lab up, waits for its status to be good and prints it; then it runs the
// job's scenarios, or keeps the lab running until ctx is done. It returns what failed.
func runLab(ctx context.Context, l *env.Lab, opts options) []string {
	err := l.Up(ctx)
	if ctx.Err() != nil {
		l.Logf("interrupted")
		return []string{"interrupted"}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		l.PrintLogTails()
		return []string{err.Error()}
	}
	l.Logf("waiting for the mirrors, network sets, DNS, controller readiness and Prometheus…")
	s, problems := status.WaitReady(ctx, l.Record(), opts.timeout, l.Exited())
	if ctx.Err() != nil {
		l.Logf("interrupted")
		return []string{"interrupted"}
	}
	l.MarkUp()
	l.Logf("up")
	fmt.Fprintln(l.Out())
	s.Print(l.Out(), l.Record())
	status.PrintProblems(l.Out(), problems)
	if opts.job == "" {
		keepRunning(ctx, l, len(problems) > 0)
		return nil
	}
	if len(problems) == 0 {
		problems = scenarios.Run(ctx, l, opts.scenarios)
	}
	if len(problems) > 0 {
		l.PrintLogTails()
	}
	return problems
}

// keepRunning keeps the lab up until ctx is done, saying when one of its children exits.
func keepRunning(ctx context.Context, l *env.Lab, unhealthy bool) {
	if unhealthy {
		fmt.Fprintf(l.Out(), "The lab stays up so you can look into it; the logs are in %s.\n", l.Path("logs"))
	}
	fmt.Fprintf(l.Out(), "Stop it with Ctrl-C, or `make lab-down` (bash ci/lab down) from another terminal.\n\n")
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(l.Out())
			return
		case err := <-l.Exited():
			l.Logf("unexpectedly, %v", err)
		}
	}
}
