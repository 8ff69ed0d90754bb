//go:build linux

package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Once the guarded process is gone, the watcher kills the process group of every listed pid
// that still runs the listed program, leaves a pid that now runs another program alone, and
// removes its file.
func TestWatcherKillsWhatTheDeadLeft(t *testing.T) {
	start := func(group bool) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	parent, orphan, other := start(false), start(true), start(true)
	file := filepath.Join(t.TempDir(), "guard")
	// other is listed under another program's name, as a reused pid would be.
	list := fmt.Sprintf("%d sleep\n%d kube-apiserver\n", orphan.Process.Pid, other.Process.Pid)
	if err := os.WriteFile(file, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := watch(parent.Process.Pid, file)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-exited:
		t.Fatalf("the watcher killed a process while its parent lived (%v)", err)
	default:
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	select {
	case err := <-exited:
		if err == nil {
			t.Error("the orphan exited by itself, not by the watcher's signal")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the orphan still runs 5 s after its parent died")
	}
	if err := w.Wait(); err != nil {
		t.Errorf("watcher: %v", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process listed under another program's name was killed: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the watcher's file is still there: %v", err)
	}
}
