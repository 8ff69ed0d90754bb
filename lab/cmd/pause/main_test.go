//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/lab/cmd/internal/cmdtest"
)

// The test binary doubles as the children the tests start, chosen by $PAUSE_TEST_HELPER:
//
//	exit   exit 0 at once
//	sleep  sleep for a minute (until killed)
//	exec   start an "exit" and a "sleep" child, wait for the first to be a zombie, print
//	       both pids on stdout, and execute $PAUSE_BINARY: pause inherits the two children,
//	       as a pod's PID 1 inherits the pod's orphans.
const helperEnv = "PAUSE_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "exit":
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "exec":
		os.Exit(execPauseWithChildren())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func execPauseWithChildren() int {
	early, err := startHelper("exit")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	late, err := startHelper("sleep")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	// early has exited before pause runs: its SIGCHLD is lost, only the reap at start
	// collects it.
	deadline := time.Now().Add(10 * time.Second)
	for !exited(early.Process.Pid) {
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "child %d has not exited\n", early.Process.Pid)
			return 3
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("%d %d\n", early.Process.Pid, late.Process.Pid)
	bin := os.Getenv("PAUSE_BINARY")
	err = syscall.Exec(bin, []string{"pause"}, os.Environ())
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", bin, err)
	return 3
}

// startHelper starts the test binary as a child in the given helper mode.
func startHelper(mode string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd, cmd.Start()
}

// procState is a process's state letter (R, S, Z...) and parent pid; ok is false when there is
// no such process (any more).
func procState(pid int) (state byte, ppid int, ok bool) {
	s, err := testbed.ReadProcessStat(pid)
	if err != nil || s.State == "" {
		return 0, 0, false
	}
	return s.State[0], s.PPID, true
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// exited tells whether process pid has exited and waits to be reaped: a zombie whose
// threads are all gone (a Go program's leader thread shows Z while its other threads still
// exit, and wait4 cannot collect it before they have).
func exited(pid int) bool {
	s, _, _ := procState(pid)
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return s == 'Z' && len(tasks) <= 1
}

func waitExited(t *testing.T, pid int) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool { return exited(pid) }) {
		s, _, ok := procState(pid)
		t.Fatalf("child %d: state %q (exists: %v), want a zombie", pid, s, ok)
	}
}

// reapUntil calls reap until it has collected every pid of want, or 10 s pass, and returns
// the sorted pids it collected.
func reapUntil(want []int) []int {
	var got []int
	waitFor(10*time.Second, func() bool {
		got = append(got, reap()...)
		return !slices.ContainsFunc(want, func(pid int) bool { return !slices.Contains(got, pid) })
	})
	slices.Sort(got)
	return got
}

// startPause starts cmd (pause, or a helper that becomes pause) and waits until pause waits
// for signals; the process is killed at the end of the test if it still runs.
func startPause(t *testing.T, cmd *exec.Cmd) (stderr *testenv.Buffer, exited <-chan error) {
	t.Helper()
	stderr = new(testenv.Buffer)
	cmd.Stderr = stderr
	done := cmdtest.Start(t, cmd)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(stderr.String(), "pause: waiting") }) {
		t.Fatalf("pause did not start waiting; stderr:\n%s", stderr)
	}
	return stderr, done
}

// stopPause sends sig and checks that pause exits 0 within a second.
func stopPause(t *testing.T, cmd *exec.Cmd, exited <-chan error, sig syscall.Signal, stderr *testenv.Buffer) {
	t.Helper()
	cmdtest.SignalExitsZero(t, cmd, exited, sig, time.Second, stderr)
	if want := fmt.Sprintf("got signal: %v", sig); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

func TestBuildsStaticWithoutCgo(t *testing.T) {
	cmdtest.CheckStatic(t, cmdtest.Build(t, "pause"))
}

func TestBlocksUntilSignalThenExitsZeroPromptly(t *testing.T) {
	bin := cmdtest.Build(t, "pause")
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin)
			stderr, exited := startPause(t, cmd)
			select {
			case err := <-exited:
				t.Fatalf("pause exited (%v) without a signal; stderr:\n%s", err, stderr)
			case <-time.After(200 * time.Millisecond):
			}
			// Some other signal does not stop it.
			if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
				t.Fatal(err)
			}
			stopPause(t, cmd, exited, sig, stderr)
		})
	}
}

func TestReapCollectsEveryExitedChild(t *testing.T) {
	var cmds []*exec.Cmd
	var want []int
	for range 3 {
		cmd, err := startHelper("exit")
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		want = append(want, cmd.Process.Pid)
	}
	for _, pid := range want {
		waitExited(t, pid)
	}
	got := reapUntil(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("reap() collected %v, want the exited children %v", got, want)
	}
	for _, cmd := range cmds {
		if _, _, ok := procState(cmd.Process.Pid); ok {
			t.Errorf("child %d still in /proc after reap", cmd.Process.Pid)
		}
		// Reaped already: nothing left to wait for.
		if err := cmd.Wait(); !errors.Is(err, syscall.ECHILD) {
			t.Errorf("Wait after reap: %v, want ECHILD", err)
		}
	}
	if got := reap(); got != nil {
		t.Errorf("reap() without children = %v, want nothing", got)
	}
}

func TestReapLeavesRunningChildrenAndDoesNotBlock(t *testing.T) {
	cmd, err := startHelper("sleep")
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL); reap() })

	start := time.Now()
	if got := reap(); got != nil {
		t.Errorf("reap() with a running child = %v, want nothing", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("reap() took %v with a running child: it blocks", d)
	}
	if s, _, ok := procState(pid); !ok || s == 'Z' {
		t.Fatalf("running child %d: state %q (exists: %v)", pid, s, ok)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExited(t, pid)
	if got := reapUntil([]int{pid}); !slices.Equal(got, []int{pid}) {
		t.Errorf("reap() collected %v after the child was killed, want [%d]", got, pid)
	}
}

// TestReapsInheritedChildren runs the built pause as the process that inherits children, as
// a pod's PID 1 inherits the pod's orphans: a helper starts two children and then executes
// pause, which must reap the one that had already exited when it started, and the other when
// it exits later (SIGCHLD); an unreaped child would stay a zombie as long as pause runs.
func TestReapsInheritedChildren(t *testing.T) {
	bin := cmdtest.Build(t, "pause")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=exec", "PAUSE_BINARY="+bin)
	stdout := new(testenv.Buffer)
	cmd.Stdout = stdout
	stderr, exited := startPause(t, cmd)

	var early, late int
	if _, err := fmt.Sscanf(stdout.String(), "%d %d", &early, &late); err != nil {
		t.Fatalf("helper's stdout %q: %v", stdout, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(late, syscall.SIGKILL) })

	gone := func(pid int) func() bool {
		return func() bool { _, _, ok := procState(pid); return !ok }
	}
	if !waitFor(5*time.Second, gone(early)) {
		s, ppid, _ := procState(early)
		t.Fatalf("child %d, exited before pause started, is still there: state %q, parent %d (pause is %d)", early, s, ppid, cmd.Process.Pid)
	}
	s, ppid, ok := procState(late)
	if !ok || s == 'Z' || ppid != cmd.Process.Pid {
		t.Fatalf("child %d: state %q, parent %d, exists %v; want running, a child of pause (%d)", late, s, ppid, ok, cmd.Process.Pid)
	}
	if err := syscall.Kill(late, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, gone(late)) {
		s, ppid, _ := procState(late)
		t.Fatalf("child %d, killed while pause ran, is still there: state %q, parent %d (pause is %d)", late, s, ppid, cmd.Process.Pid)
	}
	stopPause(t, cmd, exited, syscall.SIGTERM, stderr)
}
