package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	// MemoryLimit is its container's memory limit in bytes, 0 for none.
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
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

// The phases of a lab (State.Phase).
const (
	phaseStarting = "starting"
	phaseUp       = "up"
	phaseStopping = "stopping"
)

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
var runtimePaths = []string{kubeconfigFile, "clusters", "coredns", "nodes", "pods", "prometheus", "tmp", stateFile, stateFile + ".tmp", pidFile, egressSocket}

// removeRuntimeState removes the runtime paths.
func removeRuntimeState(dir string) error {
	var errs []error
	for _, p := range runtimePaths {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, p)))
	}
	return errors.Join(errs...)
}
