//go:build unix

// Command pause is the lab's pod sandbox ("pause") program: the first container containerd
// starts in every pod, whose only job is to exist. It holds the pod's namespaces (network,
// IPC, and PID when the pod shares its process namespace) for as long as the pod lives, so
// that the pod's real containers can come, crash and restart inside them; the kubelet's CRI
// config names its image as the sandbox image.
//
// The lab builds it itself, instead of pulling registry.k8s.io/pause, so that its nodes need
// nothing from the network. It does what Kubernetes' pause.c does:
//
//   - it blocks forever, doing nothing;
//   - it reaps zombies: as PID 1 of a pod's PID namespace, every orphaned process of the pod
//     becomes its child, and nobody else can wait for them; on SIGCHLD it collects every child
//     that has exited (wait4 with WNOHANG, in a loop), and once more at start for children it
//     inherited already exited;
//   - it exits 0 at once on SIGTERM or SIGINT, which is how the runtime stops a sandbox.
//
// It takes no arguments and writes to stderr only: a warning when it is not PID 1, a line
// once it waits, and one when it stops. Built with CGO_ENABLED=0, it is a static binary that
// needs nothing else in its image.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Stderr))
}

// run waits for SIGTERM or SIGINT, reaping children meanwhile, and returns the exit code.
func run(stderr io.Writer) int {
	// Two channels: a flood of SIGCHLD must not fill the one SIGTERM arrives on (signal.Notify
	// drops a signal when its channel is full). SIGCHLDs coalesce, which is harmless: one
	// reap collects every child that has exited.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)

	if pid := os.Getpid(); pid != 1 {
		fmt.Fprintf(stderr, "pause: warning: running as pid %d: pause should be the first process of its pod\n", pid)
	}
	// Children that exited before SIGCHLD was caught (a process that had children and then
	// executed pause) sent a SIGCHLD nobody received.
	reap()
	fmt.Fprintln(stderr, "pause: waiting for SIGTERM or SIGINT")
	for {
		select {
		case sig := <-stop:
			fmt.Fprintf(stderr, "pause: shutting down, got signal: %v\n", sig)
			return 0
		case <-children:
			reap()
		}
	}
}

// reap collects every child that has exited, without blocking, and returns their pids (none
// when no child has exited, or there is no child).
func reap() []int {
	var pids []int
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		// ECHILD: no children at all; pid 0: children, but none has exited.
		if err != nil || pid <= 0 {
			return pids
		}
		pids = append(pids, pid)
	}
}
