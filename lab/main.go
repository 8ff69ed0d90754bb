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
//	lab [-dir DIR] check  bring the lab up, check what it prints, tear it down; exit 0 or 1
//	lab [-dir DIR] [-duration D] soak  bring the lab up, churn it for D, check it, tear it down
//
// Each piece is one part (see lab.parts); without root the lab runs without the nodes, and so
// without pods, and says why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

const usage = `Usage: bash ci/lab [flags] [command]

Commands:
  up      bring the lab up, print its status, run until Ctrl-C (or "down"), tear it down (default)
  down    stop the running lab
  status  print the status of the running lab (exit 1 when it is not running or not healthy)
  check   bring the lab up, check that it works, tear it down; exit 0 when it works, 1 otherwise
  soak    bring the lab up, churn it for -duration (changes, remote cuts, controller pods
          deleted), check the mesh, footprint and alerts afterwards, tear it down; exit 0 or 1

Flags:
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join(testbed.RepoRoot(), ".lab"), "lab `directory`: runtime state, kubeconfigs, logs")
	nodes := fs.Bool("nodes", true, "run the nodes (network namespaces with semaphore-wireguard and the ping), which need root; false runs the control-plane part only")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long up and check wait for the lab to work once everything has started")
	duration := fs.Duration("duration", 10*time.Minute, "how long soak churns the lab")
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
	if len(rest) > 0 && command != reaperCommand {
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

	switch command {
	case "up":
		return up(abs, *timeout, *nodes, false, 0)
	case "check":
		return up(abs, *timeout, *nodes, true, 0)
	case "soak":
		if *duration <= 0 {
			fmt.Fprintf(os.Stderr, "lab: -duration must be positive, got %s\n", *duration)
			return 2
		}
		return up(abs, *timeout, *nodes, true, *duration)
	case "down":
		return down(abs)
	case "status":
		return status(context.Background(), abs)
	case reaperCommand:
		return reap(abs, rest)
	default:
		fmt.Fprintf(os.Stderr, "lab: unknown command %q\n\n", command)
		fs.Usage()
		return 2
	}
}
