package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/netnstopo"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// leftovers are the processes of a lab in dir that still run: those st recorded, and any
// process of a cluster or a node whose command line names the lab directory (which catches
// those started after the state was last written; comm names are cut at 15 bytes). What runs
// in a node's pods is in the node's cgroups (see cleanUp).
func leftovers(dir string, st *State) []Proc {
	seen := map[int]bool{os.Getpid(): true}
	var out []Proc
	if st != nil {
		for _, p := range st.Processes {
			if !seen[p.PID] && p.alive() {
				seen[p.PID] = true
				out = append(out, p)
			}
		}
	}
	pids, _ := allPIDs()
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		name := procName(pid)
		switch name {
		case "kube-apiserver", "etcd", "prometheus", "kube-controller", "kube-scheduler", "containerd", "kubelet", "kube-proxy":
		default:
			continue
		}
		if strings.Contains(procCmdline(pid), dir+string(filepath.Separator)) && procRunning(pid) {
			start, _ := procStart(pid)
			out = append(out, Proc{Name: name, PID: pid, Start: start})
		}
	}
	return out
}

// cleanUp kills what a lab that did not tear down left running, deletes the network namespaces
// it created, and removes its runtime state.
func cleanUp(dir string, st *State, out io.Writer) error {
	procs := leftovers(dir, st)
	for _, p := range procs {
		fmt.Fprintf(out, "lab: killing %s (pid %d)\n", p.Name, p.PID)
		// Every process the lab starts leads its own group; kill the group when it still does.
		if pgid, err := syscall.Getpgid(p.PID); err == nil && pgid == p.PID {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range procs {
		for p.alive() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if p.alive() {
			return fmt.Errorf("%s (pid %d) does not die", p.Name, p.PID)
		}
	}
	// A node's containers and shims are no children of the lab: its cgroups hold them.
	if st != nil && st.Nodes != nil {
		keyDir, _ := wireguardKeyDir()
		for _, n := range st.Nodes.Nodes {
			fmt.Fprintf(out, "lab: cleaning up node %s\n", n.Name)
			if err := node.Cleanup(n.Name, keyDir); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		if err := node.RestoreSysctls(filepath.Join(dir, sysctlsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// Deleting a node's network namespace deletes its links and addresses too; the processes
	// in it are gone by now.
	if st != nil {
		if err := deleteNetns(st.Namespaces, out); err != nil {
			return err
		}
	}
	return removeRuntimeState(dir)
}

// down stops the lab running in dir: SIGTERM, then, if it has not gone after a while, SIGKILL
// and a clean-up of what it left behind.
func down(dir string) int {
	pid, st, ok, err := running(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	if !ok {
		if pid == 0 && st == nil {
			fmt.Printf("lab: no lab is running in %s\n", dir)
			return 0
		}
		fmt.Printf("lab: the lab (pid %d) is not running any more; cleaning up after it\n", pid)
		if err := cleanUp(dir, st, os.Stdout); err != nil {
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
	lab := Proc{PID: pid}
	if st != nil && st.PID == pid {
		lab.Start = st.PIDStart
	}
	// The lab's teardown waits up to a minute for each API server (envtest's stop timeout).
	deadline := time.Now().Add(90 * time.Second)
	for lab.alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if lab.alive() {
		fmt.Printf("lab: the lab did not stop within %s; killing it\n", time.Since(start).Round(time.Second))
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for lab.alive() {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Normally the lab has removed its state and there is nothing left to do.
	st, _ = loadState(dir)
	if err := cleanUp(dir, st, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	fmt.Printf("lab: stopped in %s\n", time.Since(start).Round(100*time.Millisecond))
	return 0
}

// reaperCommand is the hidden command of the reaper, a process the lab starts so that it is
// cleaned up after even when it is killed hard. The lab's own children get a parent-death
// signal, but envtest starts kube-apiserver and etcd in their own process groups without one;
// the reaper stops them when the lab has gone without tearing down.
const reaperCommand = "_reap"

func (l *lab) startReaper() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c, err := l.startChild("reaper", exe, []string{"-dir", l.dir, reaperCommand, strconv.Itoa(os.Getpid())}, nil, l.path("logs", "lab-reaper.log"), true)
	if err != nil {
		return err
	}
	// Registered first, so stopped last: until then it would clean up after a lab killed in
	// the middle of its teardown.
	l.onTeardown(func() { c.stop(syscall.SIGKILL, time.Second) })
	return nil
}

// reap waits for the lab (args[0] is its pid) to go, then cleans up after it: with a lab that
// tore down there is nothing left to do.
func reap(dir string, args []string) int {
	if len(args) != 1 {
		return 2
	}
	labPID, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	for os.Getppid() == labPID {
		time.Sleep(500 * time.Millisecond)
	}
	st, _ := loadState(dir)
	if st != nil && st.PID != labPID {
		return 0 // another lab runs there now
	}
	if pid, err := readPID(dir); err == nil && pid != labPID {
		return 0
	}
	if err := cleanUp(dir, st, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "lab reaper: %v\n", err)
		return 1
	}
	return 0
}

// machine is what the lab must leave of this machine as it found it: the names of its network
// interfaces (in the lab's own network namespace), and the sysctls kubelet changes.
type machine struct {
	links   []string
	sysctls map[string]string
}

func machineNow() machine {
	ifs, _ := net.Interfaces()
	m := machine{sysctls: map[string]string{}}
	for _, ifc := range ifs {
		m.links = append(m.links, ifc.Name)
	}
	for _, s := range node.KubeletSysctls {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", s))
		m.sysctls[s] = strings.TrimSpace(string(v))
	}
	return m
}

// leftBehind lists what a lab in dir left after it went down: processes, network namespaces
// and node cgroups of the lab, links of this machine that were not there before, sysctls
// that differ, runtime files.
func leftBehind(dir string, before machine) []string {
	var out []string
	for _, p := range leftovers(dir, nil) {
		out = append(out, fmt.Sprintf("left behind: process %s (pid %d)", p.Name, p.PID))
	}
	entries, _ := os.ReadDir(netnstopo.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), netnsPrefix) {
			out = append(out, "left behind: network namespace "+e.Name())
		}
	}
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", node.CgroupRoot("*")))
	for _, cg := range cgroups {
		out = append(out, "left behind: cgroup "+cg)
	}
	now := machineNow()
	for _, name := range now.links {
		if !slices.Contains(before.links, name) {
			out = append(out, "left behind: link "+name+" on this machine")
		}
	}
	for s, v := range before.sysctls {
		if now.sysctls[s] != v {
			out = append(out, fmt.Sprintf("left behind: sysctl %s is %s, was %s", s, now.sysctls[s], v))
		}
	}
	for _, p := range runtimePaths {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			out = append(out, "left behind: "+filepath.Join(dir, p))
		}
	}
	return out
}
