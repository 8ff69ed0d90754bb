package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-semaphore/semaphore/lab/node"
)

// The lab's pods are the kubelets' and the scheduler's: the lab only waits for every workload
// to be available, and then records where each pod runs, so that the status, Prometheus and
// `lab check` can reach it. A pod's ports are on its node's network only: the lab forwards a
// free port of this machine's loopback to each controller's admin port.

// PodState is one pod of the lab's workloads.
type PodState struct {
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

// podIPs are the addresses (sorted as strings, as the status lists endpoints) of the pods of app in cluster.
func (st *State) podIPs(cluster, app string) []string {
	var out []string
	for _, p := range st.Pods {
		if p.Cluster == cluster && p.App == app {
			out = append(out, p.IP)
		}
	}
	slices.Sort(out)
	return out
}

// podsOf are the pods of app in cluster.
func (st *State) podsOf(cluster, app string) []PodState {
	var out []PodState
	for _, p := range st.Pods {
		if p.Cluster == cluster && p.App == app {
			out = append(out, p)
		}
	}
	return out
}

// waitForPods waits until every Deployment and DaemonSet of every cluster is available with
// all its replicas up to date, then records the pods and forwards to the controllers.
func (l *lab) waitForPods(ctx context.Context) error {
	if nodes := l.snapshot().Nodes; nodes == nil || nodes.Skipped != "" {
		return nil // startNodes said why: without nodes, no pod runs
	}
	l.logf("waiting for the scheduler and the kubelets to run every pod (images pulled from %s)…", l.registry)
	if err := l.waitAvailable(ctx, 3*time.Minute); err != nil {
		return err
	}
	if err := l.recordPods(ctx); err != nil {
		return err
	}
	l.logf("every pod runs: %d pods on %d nodes", len(l.snapshot().Pods), len(l.snapshot().Nodes.Nodes))
	return nil
}

// waitAvailable waits up to timeout until every Deployment and DaemonSet of every cluster is
// available with all its replicas up to date.
func (l *lab) waitAvailable(ctx context.Context, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pending = nil
		for _, name := range clusterNames() {
			// An error (the API server busy) is asked again.
			p, err := l.unavailable(ctx, name)
			if err != nil {
				pending = append(pending, fmt.Sprintf("%s (%v)", name, err))
				continue
			}
			pending = append(pending, p...)
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("not available: %s (see logs/kubelet-*.log and the pods' events)", strings.Join(pending, ", "))
	}
	return nil
}

// unavailable names the workloads of cluster that are not fully available yet.
func (l *lab) unavailable(ctx context.Context, cluster string) ([]string, error) {
	client := l.clusters[cluster].Client
	var out []string
	deployments, err := client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deployments.Items {
		want := ptrValue(d.Spec.Replicas, 1)
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want || d.Status.Replicas != want {
			out = append(out, fmt.Sprintf("%s/deployment/%s/%s (%d of %d available)", cluster, d.Namespace, d.Name, d.Status.AvailableReplicas, want))
		}
	}
	daemonSets, err := client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range daemonSets.Items {
		if !daemonSetAvailable(d) {
			out = append(out, fmt.Sprintf("%s/daemonset/%s/%s (%d of %d available)", cluster, d.Namespace, d.Name, d.Status.NumberAvailable, nodesPerCluster))
		}
	}
	return out, nil
}

func daemonSetAvailable(d appsv1.DaemonSet) bool {
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.DesiredNumberScheduled == nodesPerCluster &&
		s.UpdatedNumberScheduled == nodesPerCluster && s.NumberAvailable == nodesPerCluster
}

func ptrValue(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// recordPods records every running pod of the lab's workloads, the controllers among them with
// a forward to their admin port (the one they have when recorded before), and each cluster's
// CoreDNS.
func (l *lab) recordPods(ctx context.Context) error {
	before := l.snapshot()
	nodeDirs := map[string]string{}
	for _, n := range before.Nodes.Nodes {
		nodeDirs[n.Cluster+"/"+n.Name] = n.Dir
	}
	var pods []PodState
	var controllers []ControllerState
	var dns []DNSState
	for _, cluster := range clusterNames() {
		list, err := l.clusters[cluster].Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, pod := range list.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			p := PodState{
				Cluster: cluster, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
				App:  cmp.Or(pod.Labels["app.kubernetes.io/name"], pod.Labels["k8s-app"]),
				Node: pod.Spec.NodeName, IP: pod.Status.PodIP,
				Log: podLog(nodeDirs[cluster+"/"+pod.Spec.NodeName], &pod),
			}
			pods = append(pods, p)
			switch {
			case strings.HasPrefix(p.App, "semaphore-") && pod.Namespace == semaphoreNamespace:
				if i := slices.IndexFunc(before.Controllers, func(c ControllerState) bool { return c.PodUID == p.UID }); i >= 0 {
					controllers = append(controllers, before.Controllers[i])
					continue
				}
				c, err := l.controllerOf(&pod, p)
				if err != nil {
					return fmt.Errorf("%s: pod %s: %w", cluster, pod.Name, err)
				}
				controllers = append(controllers, c)
			case p.App == "kube-dns" && pod.Namespace == dnsNamespace:
				dns = append(dns, DNSState{Cluster: cluster, Pod: pod.Name, Addr: net.JoinHostPort(p.IP, "53")})
			}
		}
	}
	slices.SortFunc(controllers, func(a, b ControllerState) int {
		return cmp.Or(strings.Compare(a.Component, b.Component), strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.PodName, b.PodName))
	})
	l.mu.Lock()
	l.state.Pods, l.state.Controllers, l.state.DNS = pods, controllers, dns
	l.mu.Unlock()
	l.saveState()
	return nil
}

// controllerOf is a Semaphore controller's pod, with a port of this machine's loopback
// forwarded to its admin port (through the underlay, which routes every pod CIDR).
func (l *lab) controllerOf(pod *corev1.Pod, p PodState) (ControllerState, error) {
	c := ControllerState{
		Component: p.App, Cluster: p.Cluster, PodName: pod.Name, PodUID: p.UID, PodIP: p.IP, Log: p.Log,
	}
	if pod.Spec.HostNetwork {
		c.Node = pod.Spec.NodeName // a DaemonSet's pod: one per node
	}
	ctr := pod.Spec.Containers[0]
	if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
		c.MemoryLimit = q.Value()
	}
	for _, e := range ctr.Env {
		switch e.Name {
		case "SEMAPHORE_LEADER_ELECT_LEASE_NAME":
			c.Lease = e.Value
		case "SEMAPHORE_REMOTES_DIR":
			c.RemotesDir = e.Value
		}
	}
	port := 0
	for _, cp := range ctr.Ports {
		if cp.Name == "admin" {
			port = int(cp.ContainerPort)
		}
	}
	if port == 0 {
		return c, fmt.Errorf("no admin port")
	}
	admin, stop, err := forwardFromNetns(underlayNetns, net.JoinHostPort(p.IP, strconv.Itoa(port)))
	if err != nil {
		return c, err
	}
	l.onTeardown(stop)
	c.Admin = admin
	return c, nil
}

// podLog is where the kubelet of the node whose state is in nodeDir writes the output of pod's
// first container: /var/log/pods/<namespace>_<name>_<uid>/<container>/0.log in the node.
func podLog(nodeDir string, pod *corev1.Pod) string {
	if nodeDir == "" || len(pod.Spec.Containers) == 0 {
		return ""
	}
	return filepath.Join(node.HostPath(nodeDir, "/var/log/pods"), pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), pod.Spec.Containers[0].Name, "0.log")
}
