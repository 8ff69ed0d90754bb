//go:build linux

package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// envtest starts kube-apiserver and etcd in process groups of their own and without a
// parent-death signal, so a test binary that dies without stopping its clusters (a -timeout
// panic, kill -9, Ctrl-C) would leave them running. guardChildren has a watcher process, started
// once per test binary in a session of its own, kill them when this process is gone: it polls
// this pid every second, then kills the process group of every guarded pid that still runs the
// same program. The guarded pids are kept in a file, rewritten at every change.
var guard struct {
	sync.Mutex
	file string
	pids map[int]string // pid -> its /proc comm
	err  error
}

// guardedPrograms are the programs whose children guardChildren guards.
var guardedPrograms = map[string]bool{"kube-apiserver": true, "etcd": true}

// watcherScript is the watcher: sh -c watcherScript sh <pid> <file>.
const watcherScript = `while kill -0 "$1" 2>/dev/null; do sleep 1; done
while read -r pid name; do
	if [ "$(cat /proc/$pid/comm 2>/dev/null)" = "$name" ]; then
		kill -9 "-$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	fi
done < "$2"
rm -f "$2"`

// guardChildren brings the guard up to date: every running child of this process that runs a
// guarded program is added, and pids whose process is gone are dropped (so that a pid reused
// later is never killed). Errors are remembered and reported once, on stderr: a missing guard
// costs nothing but leftovers.
func guardChildren() {
	guard.Lock()
	defer guard.Unlock()
	if guard.err != nil {
		return
	}
	if guard.file == "" {
		if err := startWatcher(); err != nil {
			guard.err = err
			fmt.Fprintf(os.Stderr, "testbed: no guard for the API servers if this process dies: %v\n", err)
			return
		}
	}
	for pid, name := range guard.pids {
		if ProcessName(pid) != name {
			delete(guard.pids, pid)
		}
	}
	children, _ := ChildProcesses(os.Getpid())
	for _, pid := range children {
		if name := ProcessName(pid); guardedPrograms[name] {
			guard.pids[pid] = name
		}
	}
	var b strings.Builder
	for pid, name := range guard.pids {
		fmt.Fprintf(&b, "%d %s\n", pid, name)
	}
	tmp := guard.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err == nil {
		_ = os.Rename(tmp, guard.file)
	}
}

func startWatcher() error {
	f, err := os.CreateTemp("", "semaphore-testbed-guard-")
	if err != nil {
		return err
	}
	_ = f.Close()
	cmd, err := watch(os.Getpid(), f.Name())
	if err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped if it ever ends first
	guard.file, guard.pids = f.Name(), map[int]string{}
	return nil
}

// watch starts the watcher of process parent, which kills what file lists once parent is gone.
func watch(parent int, file string) (*exec.Cmd, error) {
	cmd := exec.Command("sh", "-c", watcherScript, "sh", strconv.Itoa(parent), file)
	// A session of its own: a Ctrl-C to the test's process group must not take the watcher too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, cmd.Start()
}
