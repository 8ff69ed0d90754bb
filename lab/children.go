package main

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is a process the lab started itself (a controller, CoreDNS, the reaper).
type child struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it exited; set before done is closed
}

// startChild starts path with args and env (nil: the lab's environment), its output going to
// the file logPath. The child leads its own process group, so that stopping it stops what it
// started too, and a Ctrl-C in the terminal reaches only the lab, which stops the children in
// order. Unless outliveLab is set, the child is also killed when the lab dies (see
// sysProcAttr).
func (l *lab) startChild(name, path string, args, env []string, logPath string, outliveLab bool) (*child, error) {
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
	c := &child{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	l.recordProcess(name, cmd.Process.Pid)
	go func() {
		c.err = cmd.Wait()
		close(c.done)
		if !l.stopping.Load() {
			select {
			case l.exited <- c:
			default:
			}
		}
	}()
	return c, nil
}

// stop signals the child's process group with sig and waits for the child to exit; after
// grace it kills the group.
func (c *child) stop(sig syscall.Signal, grace time.Duration) {
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
func stopAll(children []*child, sig syscall.Signal, grace time.Duration) {
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() { c.stop(sig, grace) })
	}
	wg.Wait()
}

// recordProcess adds a process to the state, for cleaning up after a lab that died.
func (l *lab) recordProcess(name string, pid int) {
	start, _ := procStart(pid)
	l.mu.Lock()
	l.state.Processes = append(l.state.Processes, Proc{Name: name, PID: pid, Start: start})
	l.mu.Unlock()
	l.saveState()
}

// recordChildren records the lab's child processes with one of names that it has not
// recorded yet: those that the test harness started.
func (l *lab) recordChildren(names ...string) {
	pids, err := childrenOf(os.Getpid())
	if err != nil {
		l.logf("listing child processes: %v", err)
		return
	}
	known := map[int]bool{}
	for _, p := range l.snapshot().Processes {
		known[p.PID] = true
	}
	for _, pid := range pids {
		name := procName(pid)
		for _, n := range names {
			if name == n && !known[pid] {
				l.recordProcess(name, pid)
			}
		}
	}
}
