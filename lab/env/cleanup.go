package env

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// labPrograms are the names (comm, cut at 15 bytes) of the programs of a cluster or a node
// that the lab runs.
var labPrograms = []string{"kube-apiserver", "etcd", "prometheus", "kube-controller", "kube-scheduler", "containerd", "kubelet", "kube-proxy"}

// leftovers are the processes of a lab in dir that still run: those rec recorded, and any
// process of a cluster or a node whose command line names the lab directory (which catches
// those started after the record was last written). What runs in a node's pods is in the
// node's cgroups (see cleanUp).
func leftovers(dir string, rec *layout.Record) []layout.Process {
	seen := map[int]bool{os.Getpid(): true}
	var out []layout.Process
	if rec != nil {
		for _, p := range rec.Processes {
			if !seen[p.PID] && p.Alive() {
				seen[p.PID] = true
				out = append(out, p)
			}
		}
	}
	pids, _ := testbed.Processes()
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		name := testbed.ProcessName(pid)
		if !slices.Contains(labPrograms, name) {
			continue
		}
		if strings.Contains(testbed.ProcessCmdline(pid), dir+string(filepath.Separator)) && testbed.ProcessRunning(pid) {
			s, _ := testbed.ReadProcessStat(pid)
			out = append(out, layout.Process{Name: name, PID: pid, Start: s.Start})
		}
	}
	return out
}

// cleanUp kills what a lab that did not tear down left running, deletes the network namespaces
// it created, and removes its runtime state.
func cleanUp(dir string, rec *layout.Record, out io.Writer) error {
	if err := killAll(leftovers(dir, rec), out); err != nil {
		return err
	}
	// A CPU share the lab held the hostile remote to while it died.
	if err := node.RemoveShares(); err != nil {
		return err
	}
	// A node's containers and shims are no children of the lab: its cgroups hold them.
	if rec != nil && rec.Nodes != nil {
		keyDir, _ := wireguardKeyDir()
		for _, n := range rec.Nodes.Nodes {
			fmt.Fprintf(out, "lab: cleaning up node %s\n", n.Name)
			if err := node.Cleanup(n.Name, keyDir); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		// Without the record of the sysctls (the nodes never started) there is nothing to do.
		if err := node.RestoreSysctls(filepath.Join(dir, sysctlsFile)); err != nil {
			return err
		}
	}
	// Deleting a node's network namespace deletes its links and addresses too; the processes
	// in it are gone by now.
	if rec != nil {
		if err := deleteNetns(rec.Namespaces, out); err != nil {
			return err
		}
	}
	return removeRuntimeState(dir)
}

// killAll kills procs, each with its process group when it leads one (every process the lab
// starts does), and waits up to 10 seconds for them to be gone.
func killAll(procs []layout.Process, out io.Writer) error {
	for _, p := range procs {
		fmt.Fprintf(out, "lab: killing %s (pid %d)\n", p.Name, p.PID)
		if pgid, err := syscall.Getpgid(p.PID); err == nil && pgid == p.PID {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range procs {
		for p.Alive() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if p.Alive() {
			return fmt.Errorf("%s (pid %d) does not die", p.Name, p.PID)
		}
	}
	return nil
}

// Down stops the lab running in dir: SIGTERM, then, if it has not gone after a while, SIGKILL
// and a clean-up of what it left behind. It returns the command's exit code.
func Down(dir string) int {
	pid, rec, ok, err := layout.Running(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	if !ok {
		if pid == 0 && rec == nil {
			fmt.Printf("lab: no lab is running in %s\n", dir)
			return 0
		}
		fmt.Printf("lab: the lab (pid %d) is not running any more; cleaning up after it\n", pid)
		if err := cleanUp(dir, rec, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Printf("lab: stopping the lab (pid %d)…\n", pid)
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	stopLab(layout.LabProcess(pid, rec), start)
	// Normally the lab has removed its record and there is nothing left to do.
	rec, _ = layout.LoadRecord(dir)
	if err := cleanUp(dir, rec, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	fmt.Printf("lab: stopped in %s\n", time.Since(start).Round(100*time.Millisecond))
	return 0
}

// stopLab waits for the lab process, signalled at start, to go, and kills it when it has not
// after a while.
func stopLab(lab layout.Process, start time.Time) {
	// The lab's teardown waits up to a minute for each API server (envtest's stop timeout).
	deadline := time.Now().Add(90 * time.Second)
	for lab.Alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if lab.Alive() {
		fmt.Printf("lab: the lab did not stop within %s; killing it\n", time.Since(start).Round(time.Second))
		_ = syscall.Kill(lab.PID, syscall.SIGKILL)
		for lab.Alive() {
			time.Sleep(50 * time.Millisecond)
		}
	}
}
