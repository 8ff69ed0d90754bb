package env

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// Child is a process the lab started itself (a controller manager, the egress proxy,
// Prometheus, the reaper).
type Child struct {
	Name string
	// Log is the file its output goes to.
	Log string
	// Err is how it exited; set before done is closed.
	Err  error
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild starts path with args and env (nil: the lab's environment), its output going to
// the file logPath. The child leads its own process group, so that stopping it stops what it
// started too, and a Ctrl-C in the terminal reaches only the lab, which stops the children in
// order. Unless outliveLab is set, the child is also killed when the lab dies (see
// sysProcAttr).
func (l *Lab) startChild(name, path string, args, env []string, logPath string, outliveLab bool) (*Child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr(!outliveLab)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	l.recordProcess(name, cmd.Process.Pid)
	go func() {
		c.Err = cmd.Wait()
		close(c.done)
		if !l.stopping.Load() {
			select {
			case l.exited <- fmt.Errorf("%s exited (%w); see %s", c.Name, c.Err, c.Log):
			default:
			}
		}
	}()
	return c, nil
}

// stop signals the child's process group with sig and waits for the child to exit; after
// grace it kills the group.
func (c *Child) stop(sig syscall.Signal, grace time.Duration) {
	pid := c.cmd.Process.Pid
	_ = syscall.Kill(-pid, sig)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-c.done
	}
	// Whatever the child started and left behind in its group goes too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// stopAll stops children in parallel.
func stopAll(children []*Child, sig syscall.Signal, grace time.Duration) {
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() { c.stop(sig, grace) })
	}
	wg.Wait()
}

// recordProcess adds a process to the run record, for cleaning up after a lab that died.
func (l *Lab) recordProcess(name string, pid int) {
	s, _ := testbed.ReadProcessStat(pid)
	l.update(func(rec *layout.Record) {
		rec.Processes = append(rec.Processes, layout.Process{Name: name, PID: pid, Start: s.Start})
	})
}

// recordChildren records the lab's child processes with one of names that it has not
// recorded yet: those that the test harness started.
func (l *Lab) recordChildren(names ...string) {
	pids, err := testbed.ChildProcesses(os.Getpid())
	if err != nil {
		l.Logf("listing child processes: %v", err)
		return
	}
	known := map[int]bool{}
	for _, p := range l.Record().Processes {
		known[p.PID] = true
	}
	for _, pid := range pids {
		name := testbed.ProcessName(pid)
		for _, n := range names {
			if name == n && !known[pid] {
				l.recordProcess(name, pid)
			}
		}
	}
}
