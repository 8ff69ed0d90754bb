package layout

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// Pod is one pod of the lab's workloads.
type Pod struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// App is the pod's app.kubernetes.io/name (or k8s-app) label: what it is a pod of.
	App  string `json:"app"`
	Node string `json:"node"`
	IP   string `json:"ip"`
	// Log is the file the kubelet writes the pod's (first) container's output to.
	Log string `json:"log"`
}

// PodOf is what the record says of pod, in cluster: where it runs, and where the kubelet
// writes its output.
func (rec *Record) PodOf(cluster string, pod *corev1.Pod) Pod {
	p := Pod{
		Cluster: cluster, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
		App:  cmp.Or(pod.Labels["app.kubernetes.io/name"], pod.Labels["k8s-app"]),
		Node: pod.Spec.NodeName, IP: pod.Status.PodIP,
	}
	if rec.Nodes != nil {
		for _, n := range rec.Nodes.Nodes {
			if n.Cluster == cluster && n.Name == pod.Spec.NodeName {
				p.Log = PodLog(n.Dir, pod)
			}
		}
	}
	return p
}

// PodLog is where the kubelet of the node whose state is in nodeDir writes the output of pod's
// first container: /var/log/pods/<namespace>_<name>_<uid>/<container>/0.log in the node.
func PodLog(nodeDir string, pod *corev1.Pod) string {
	if nodeDir == "" || len(pod.Spec.Containers) == 0 {
		return ""
	}
	return filepath.Join(node.HostPath(nodeDir, "/var/log/pods"), pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), pod.Spec.Containers[0].Name, "0.log")
}

// PrometheusBinary is where the Debian package (installed by ci/promtool.sh) puts Prometheus.
const PrometheusBinary = "/usr/bin/prometheus"

// Prometheus is the running Prometheus.
type Prometheus struct {
	URL    string `json:"url"`
	Config string `json:"config"`
	Log    string `json:"log"`
	PID    int    `json:"pid"`
	// Rules is how many rules the files of alerts/ hold: all must be loaded.
	Rules int `json:"rules"`
	// RuleFiles are the copies of alerts/ the configuration names.
	RuleFiles []string `json:"ruleFiles"`
}

// Record is the run record a running lab writes to state.json: what it runs and where, which
// `lab status` reads, and what `lab down` and the reaper need to clean up after a lab that
// died.
type Record struct {
	PID      int             `json:"pid"`
	PIDStart uint64          `json:"pidStart,omitempty"`
	Started  time.Time       `json:"started"`
	Phase    string          `json:"phase"`
	Dir      string          `json:"dir"`
	Clusters []ClusterRecord `json:"clusters,omitempty"`
	// Registry is the host:port of the lab's OCI registry.
	Registry string `json:"registry,omitempty"`
	// Kubeconfig is the lab's kubeconfig, a context per cluster.
	Kubeconfig  string       `json:"kubeconfig,omitempty"`
	Controllers []Controller `json:"controllers,omitempty"`
	DNS         []DNSServer  `json:"dns,omitempty"`
	Prometheus  *Prometheus  `json:"prometheus,omitempty"`
	// Nodes are the nodes, network namespaces running containerd, kubelet and kube-proxy, or why
	// there are none.
	Nodes *Nodes `json:"nodes,omitempty"`
	// Pods are the running pods of every cluster.
	Pods []Pod `json:"pods,omitempty"`
	// Namespaces are the network namespaces the lab created, for deleting them after it: each
	// is recorded before it is created.
	Namespaces []string `json:"namespaces,omitempty"`
	// Processes are all the processes the lab started, for cleaning up after it.
	Processes []Process `json:"processes,omitempty"`
}

// ClusterRecord is one running cluster.
type ClusterRecord struct {
	Name             string `json:"name"`
	Server           string `json:"server"`
	ServiceCIDR      string `json:"serviceCIDR"`
	Kubeconfig       string `json:"kubeconfig"`
	DirectKubeconfig string `json:"directKubeconfig"`
}

// Controller is one running controller: a pod of the umbrella release.
type Controller struct {
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

// Where is where a controller runs: in a cluster, or on a node of one.
func (c Controller) Where() string {
	if c.Node != "" {
		return "on " + c.Node
	}
	if c.PodName != "" {
		return "in " + c.Cluster + " (" + c.PodName + ")"
	}
	return "in " + c.Cluster
}

// DNSServer is one cluster's CoreDNS pod.
type DNSServer struct {
	Cluster string `json:"cluster"`
	Pod     string `json:"pod"`
	// Addr is the pod's DNS address, on its cluster's pod network.
	Addr string `json:"addr"`
}

// Process identifies a process across pid reuse.
type Process struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

// Alive reports whether p still runs (and is the same process, where that can be told).
func (p Process) Alive() bool {
	if !testbed.ProcessRunning(p.PID) {
		return false
	}
	s, err := testbed.ReadProcessStat(p.PID)
	return err != nil || p.Start == 0 || s.Start == p.Start
}

// NodesSkipped tells whether the lab runs without nodes, and so without pods: then the
// clusters and the releases are all there is to check.
func (rec *Record) NodesSkipped() bool {
	return rec.Nodes != nil && rec.Nodes.Skipped != ""
}

// PodIPs are the addresses (sorted as strings, as the status lists endpoints) of the pods of
// app in cluster.
func (rec *Record) PodIPs(cluster, app string) []string {
	var out []string
	for _, p := range rec.PodsOf(cluster, app) {
		out = append(out, p.IP)
	}
	slices.Sort(out)
	return out
}

// PodsOf are the pods of app in cluster.
func (rec *Record) PodsOf(cluster, app string) []Pod {
	var out []Pod
	for _, p := range rec.Pods {
		if p.Cluster == cluster && p.App == app {
			out = append(out, p)
		}
	}
	return out
}

// NetnsOf is the network namespace of the node named node.
func (rec *Record) NetnsOf(node string) string {
	for _, n := range rec.Nodes.Nodes {
		if n.Name == node {
			return n.Netns
		}
	}
	return ""
}

// LocalZones are the zones of cluster's nodes, sorted (none without nodes).
func (rec *Record) LocalZones(cluster string) []string {
	var zones []string
	if rec.Nodes != nil {
		for _, n := range rec.Nodes.Nodes {
			if n.Cluster == cluster && !slices.Contains(zones, n.Zone) {
				zones = append(zones, n.Zone)
			}
		}
	}
	slices.Sort(zones)
	return zones
}

// The phases of a lab (Record.Phase).
const (
	PhaseStarting = "starting"
	PhaseUp       = "up"
	PhaseStopping = "stopping"
)

// RecordFile is the run record, in the lab directory.
const RecordFile = "state.json"

// SaveRecord writes rec as dir's run record, replacing the previous one in one step.
func SaveRecord(dir string, rec *Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, RecordFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, RecordFile))
}

// LoadRecord reads dir's run record.
func LoadRecord(dir string) (*Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	return &rec, nil
}
