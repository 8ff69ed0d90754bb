//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
)

// What /proc tells of this machine's processes, read in one place (with procfs) for the tests,
// the lab and its nodes alike.

// ProcessStat is what /proc/<pid>/stat tells of a process.
type ProcessStat struct {
	// State is R, S, Z, X...: Z and X have exited.
	State string
	PPID  int
	// Start is when the process started, in clock ticks after boot: it tells a process apart
	// from a later one that reuses its pid.
	Start uint64
}

// ReadProcessStat reads process pid's stat.
func ReadProcessStat(pid int) (ProcessStat, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ProcessStat{}, err
	}
	s, err := p.Stat()
	if err != nil {
		return ProcessStat{}, err
	}
	return ProcessStat{State: s.State, PPID: s.PPID, Start: s.Starttime}, nil
}

// ProcessRunning reports whether process pid exists and has not exited (a zombie has).
func ProcessRunning(pid int) bool {
	s, err := ReadProcessStat(pid)
	return err == nil && s.State != "Z" && s.State != "X"
}

// ProcessName is the name of process pid's executable as the kernel keeps it (at most 15
// bytes), "" when it is gone.
func ProcessName(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	name, _ := p.Comm()
	return name
}

// ProcessCmdline is process pid's command line, its arguments joined by spaces ("" when it is
// gone).
func ProcessCmdline(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	args, _ := p.CmdLine()
	return strings.Join(args, " ")
}

// Processes lists every process of this machine.
func Processes() ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.PID
	}
	return pids, nil
}

// ChildProcesses lists the children of process ppid.
func ChildProcesses(ppid int) ([]int, error) {
	pids, err := Processes()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		if s, err := ReadProcessStat(pid); err == nil && s.PPID == ppid {
			out = append(out, pid)
		}
	}
	return out, nil
}

// PeakRSS is the high-water mark of process pid's resident memory (VmHWM), in bytes.
func PeakRSS(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	s, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	if s.VmHWM == 0 {
		return 0, errors.New("no VmHWM in /proc status")
	}
	return float64(s.VmHWM), nil
}

// PodProcessRoot is the root directory, as this machine sees it (/proc/<pid>/root), of a
// process of the pod with uid (the kubelet names every pod's cgroup pod<uid>) whose root holds
// path: the application container's process that the kubelet gave path (a ServiceAccount
// token, say; the sandbox's has no volumes).
func PodProcessRoot(uid, path string) (string, error) {
	pid, err := PodProcessWith(uid, path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/proc/%d/root", pid), nil
}

// PodProcessWith is a process of the pod with uid whose root has path: one of a container's
// processes, not the pod's sandbox, when path is in the container's image or mounts.
func PodProcessWith(uid, path string) (int, error) {
	pids, err := Processes()
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		if !inPodCgroup(pid, uid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path)); err == nil {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of pod %s with %s on this machine", uid, path)
}

// PodNetns is the network namespace of the pod with uid, as a path InNetns takes: that of
// one of its processes (/proc/<pid>/ns/net). A host-network pod's is its node's.
func PodNetns(uid string) (string, error) {
	pids, err := Processes()
	if err != nil {
		return "", err
	}
	for _, pid := range pids {
		if inPodCgroup(pid, uid) {
			return fmt.Sprintf("/proc/%d/ns/net", pid), nil
		}
	}
	return "", fmt.Errorf("no process of pod %s on this machine", uid)
}

// inPodCgroup tells whether process pid is in a cgroup of the pod with uid.
func inPodCgroup(pid int, uid string) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	cgroups, err := p.Cgroups()
	if err != nil {
		return false
	}
	for _, c := range cgroups {
		if strings.Contains(c.Path, "/pod"+uid+"/") {
			return true
		}
	}
	return false
}
