//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts a child in its own process group and, when dieWithLab is set, has the
// kernel kill it when the lab dies, even by SIGKILL (PR_SET_PDEATHSIG). The signal is tied to
// the OS thread that started the child; Go only retires threads that a goroutine locked and
// left locked, which the lab does only when testbed.InNetns cannot switch a thread back from a
// node's network namespace. The setting survives exec, so a node's semaphore-wireguard, started
// through ip netns exec, unshare and sh, dies with the lab too.
func sysProcAttr(dieWithLab bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if dieWithLab {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}

// stat returns the fields of /proc/<pid>/stat after the command name: field 3 (state) is
// at index 0.
func stat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may contain spaces and parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, errors.New("malformed /proc stat")
	}
	return fields, nil
}

// procStart is the start time of process pid (clock ticks after boot), which tells a process
// apart from a later one that reuses its pid.
func procStart(pid int) (uint64, error) {
	f, err := stat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// procRunning reports whether process pid exists and has not exited (a zombie has).
func procRunning(pid int) bool {
	f, err := stat(pid)
	return err == nil && f[0] != "Z" && f[0] != "X"
}

// procName is the name of process pid's executable, as the kernel keeps it (at most 15 bytes).
func procName(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(data))
}

// procCmdline is process pid's command line, its arguments joined by spaces.
func procCmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
}

// allPIDs lists every process.
func allPIDs() ([]int, error) {
	entries, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(filepath.Base(e)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// childrenOf lists the children of process ppid.
func childrenOf(ppid int) ([]int, error) {
	pids, err := allPIDs()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		f, err := stat(pid)
		if err != nil {
			continue
		}
		if p, _ := strconv.Atoi(f[1]); p == ppid {
			out = append(out, pid)
		}
	}
	return out, nil
}

// containerRoot is the root directory of the application container of the pod with uid, as
// this machine sees it (/proc/<pid>/root): the pod's process that the kubelet gave the pod's
// ServiceAccount token (the sandbox's has no volumes). The kubelet names every pod's cgroup
// pod<uid>.
func containerRoot(uid string) (string, error) {
	pids, err := allPIDs()
	if err != nil {
		return "", err
	}
	for _, pid := range pids {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !strings.Contains(string(cg), "/pod"+uid+"/") {
			continue
		}
		root := fmt.Sprintf("/proc/%d/root", pid)
		if _, err := os.Stat(filepath.Join(root, serviceAccountDir)); err == nil {
			return root, nil
		}
	}
	return "", fmt.Errorf("no process of pod %s with its ServiceAccount's token on this machine", uid)
}
