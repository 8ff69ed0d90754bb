package main

import (
	"context"
	"encoding/json"
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

// State is what a running lab writes to state.json: what `lab status` shows, and what `lab
// down` and the reaper need to clean up after a lab that died.
type State struct {
	PID      int            `json:"pid"`
	PIDStart uint64         `json:"pidStart,omitempty"`
	Started  time.Time      `json:"started"`
	Phase    string         `json:"phase"`
	Dir      string         `json:"dir"`
	Clusters []ClusterState `json:"clusters,omitempty"`
	// Registry is the host:port of the lab's OCI registry.
	Registry string `json:"registry,omitempty"`
	// Kubeconfig is the lab's kubeconfig, a context per cluster.
	Kubeconfig  string            `json:"kubeconfig,omitempty"`
	Controllers []ControllerState `json:"controllers,omitempty"`
	DNS         []DNSState        `json:"dns,omitempty"`
	Prometheus  *PrometheusState  `json:"prometheus,omitempty"`
	// Nodes are the nodes, network namespaces running containerd, kubelet and kube-proxy, or why
	// there are none.
	Nodes *NodesState `json:"nodes,omitempty"`
	// Pods are the running pods of every cluster.
	Pods []PodState `json:"pods,omitempty"`
	// Namespaces are the network namespaces the lab created, for deleting them after it: each
	// is recorded before it is created.
	Namespaces []string `json:"namespaces,omitempty"`
	// Processes are all the processes the lab started, for cleaning up after it.
	Processes []Proc `json:"processes,omitempty"`
}

// The phases of a lab.
const (
	phaseStarting = "starting"
	phaseUp       = "up"
	phaseStopping = "stopping"
)

// ClusterState is one running cluster.
type ClusterState struct {
	Name             string `json:"name"`
	Server           string `json:"server"`
	ServiceCIDR      string `json:"serviceCIDR"`
	Kubeconfig       string `json:"kubeconfig"`
	DirectKubeconfig string `json:"directKubeconfig"`
}

// ControllerState is one running controller: a pod of the umbrella release.
type ControllerState struct {
	Component string `json:"component"`
	Cluster   string `json:"cluster"`
	// Admin is a port of this machine's loopback forwarded to the pod's admin port.
	Admin string `json:"admin"`
	// Log is the file the kubelet writes the pod's output to.
	Log string `json:"log"`
	// Node is the node a DaemonSet's controller runs on (semaphore-wireguard), "" for a
	// Deployment's.
	Node    string `json:"node,omitempty"`
	PodName string `json:"podName"`
	PodUID  string `json:"podUID"`
	PodIP   string `json:"podIP"`
	// Lease is the name of the leader-election Lease (in the semaphore namespace) when the pod
	// elects a leader.
	Lease string `json:"lease,omitempty"`
	// RemotesDir is where the pod reads its remotes' kubeconfigs (SEMAPHORE_REMOTES_DIR).
	RemotesDir string `json:"remotesDir,omitempty"`
}

// DNSState is one cluster's CoreDNS pod.
type DNSState struct {
	Cluster string `json:"cluster"`
	Pod     string `json:"pod"`
	// Addr is the pod's DNS address, on the underlay.
	Addr string `json:"addr"`
}

// Proc identifies a process across pid reuse.
type Proc struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

// alive reports whether p still runs (and is the same process, where that can be told).
func (p Proc) alive() bool {
	if !procRunning(p.PID) {
		return false
	}
	start, err := procStart(p.PID)
	return err != nil || p.Start == 0 || start == p.Start
}

const (
	pidFile   = "lab.pid"
	stateFile = "state.json"
)

func saveState(dir string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func loadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &st, nil
}

func readPID(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, pidFile), err)
	}
	return pid, nil
}

// running returns the pid and state of the lab that runs in dir. ok is false when none does;
// st is then the state a lab that died left behind, if any.
func running(dir string) (pid int, st *State, ok bool, err error) {
	st, err = loadState(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, false, err
	}
	pid, err = readPID(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, st, false, nil
	}
	if err != nil {
		return 0, st, false, err
	}
	p := Proc{PID: pid}
	if st != nil && st.PID == pid {
		p.Start = st.PIDStart
	}
	return pid, st, p.alive(), nil
}

// acquire makes dir the directory of a new lab: it refuses when a lab runs there, cleans up
// after one that died, and creates the pid file.
func acquire(dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pid, st, ok, err := running(dir)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("a lab is already running in %s (pid %d): `bash ci/lab status` shows it, `make lab-down` (bash ci/lab down) stops it", dir, pid)
	}
	if pid != 0 || st != nil {
		fmt.Fprintf(out, "lab: cleaning up after a lab that did not tear down (pid %d)\n", pid)
		if err := cleanUp(dir, st, out); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, pidFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("another lab is starting in %s", dir)
		}
		return err
	}
	_, err = fmt.Fprintln(f, os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runtimePaths are what only a running lab needs, in its directory. The binaries and the logs
// are not among them: they stay.
var runtimePaths = []string{kubeconfigFile, "clusters", "coredns", "nodes", "pods", "prometheus", "tmp", stateFile, stateFile + ".tmp", pidFile}

// removeRuntimeState removes the runtime paths.
func removeRuntimeState(dir string) error {
	var errs []error
	for _, p := range runtimePaths {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, p)))
	}
	return errors.Join(errs...)
}

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

// status prints the status of the lab running in dir.
func status(ctx context.Context, dir string) int {
	pid, st, ok, err := running(dir)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	case !ok && pid == 0 && st == nil:
		fmt.Printf("No lab is running in %s. Start one with `make lab` (bash ci/lab).\n", dir)
		return 1
	case !ok:
		fmt.Printf("The lab (pid %d) in %s is not running any more; `make lab-down` (bash ci/lab down) cleans up after it.\n", pid, dir)
		return 1
	case st == nil || st.Phase == phaseStarting:
		fmt.Printf("The lab (pid %d) in %s is still starting.\n", pid, dir)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := collect(ctx, st)
	printStatus(os.Stdout, st, s)
	problems := findProblems(st, s)
	printProblems(os.Stdout, problems)
	if st.Phase != phaseUp || len(problems) > 0 {
		return 1
	}
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
