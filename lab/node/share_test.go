//go:build linux

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// cpuCgroupOf is process pid's cgroup in the hierarchy of the cpu controller.
func cpuCgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		// 4:cpu:/semaphore-share-x, or 4:cpu,cpuacct:/... where both are mounted together.
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
			return parts[2]
		}
	}
	t.Fatalf("process %d has no cpu cgroup:\n%s", pid, data)
	return ""
}

// A share weighs its processes as one, counts the time they use, and, closed, gives them back
// to the root of the hierarchy and leaves no cgroup behind: the lab holds the hostile remote's
// API server to one while it floods, and those processes run on after it.
func TestShareHoldsProcessesAndGivesThemBack(t *testing.T) {
	testenv.RequireNamespaces(t)
	requireNodeSupport(t)
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	pid := busy.Process.Pid

	s, err := NewShare("test", 512)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Add(pid); err != nil {
		t.Fatal(err)
	}
	if got, want := cpuCgroupOf(t, pid), "/"+sharePrefix+"test"; got != want {
		t.Errorf("the process's cpu cgroup is %s, want %s", got, want)
	}
	for _, dir := range s.dirs {
		if data, err := os.ReadFile(filepath.Join(dir, "cpu.shares")); err == nil && strings.TrimSpace(string(data)) != "512" {
			t.Errorf("%s/cpu.shares = %s, want 512", dir, data)
		}
	}
	if got := ShareCgroups(); len(got) == 0 {
		t.Error("ShareCgroups lists no share while one exists")
	}
	time.Sleep(300 * time.Millisecond)
	if used := s.Usage(); used < 50*time.Millisecond {
		t.Errorf("the share counted %s for a process that spun 300 ms", used)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := cpuCgroupOf(t, pid); got != "/" {
		t.Errorf("after Close the process's cpu cgroup is %s, want /", got)
	}
	if left := ShareCgroups(); len(left) > 0 {
		t.Errorf("after Close, cgroups are left: %v", left)
	}
}

// RemoveShares removes what a lab that died left: a share still holding a process, which goes
// back to the root.
func TestRemoveSharesCleansUpAfterADeadLab(t *testing.T) {
	testenv.RequireNamespaces(t)
	requireNodeSupport(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	s, err := NewShare("dead-lab", 1024)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Add(sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := RemoveShares(); err != nil {
		t.Fatal(err)
	}
	if left := ShareCgroups(); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if got := cpuCgroupOf(t, sleeper.Process.Pid); got != "/" {
		t.Errorf("the process's cpu cgroup is %s, want /", got)
	}
}
