package env

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/adminport"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/rollout"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The lab's pods are the kubelets' and the scheduler's: the lab only waits for every workload
// to be available, and then records where each pod runs, so that the status, Prometheus and
// `lab check` can reach it. A pod's ports are on its node's network only: the lab forwards a
// free port of this machine's loopback to each controller's admin port.

// waitForPods waits until every Deployment and DaemonSet of every cluster is available with
// all its replicas up to date, then records the pods and forwards to the controllers.
func (l *Lab) waitForPods(ctx context.Context) error {
	if rec := l.Record(); rec.Nodes == nil || rec.NodesSkipped() {
		return nil // startNodes said why: without nodes, no pod runs
	}
	l.Logf("waiting for the scheduler and the kubelets to run every pod (images pulled from %s)…", l.registry)
	if err := l.WaitAvailable(ctx, 3*time.Minute); err != nil {
		return err
	}
	if err := l.RecordPods(ctx); err != nil {
		return err
	}
	l.Logf("every pod runs: %d pods on %d nodes", len(l.Record().Pods), len(l.Record().Nodes.Nodes))
	return nil
}

// WaitAvailable waits up to timeout until every Deployment and DaemonSet of every cluster is
// available with all its replicas up to date.
func (l *Lab) WaitAvailable(ctx context.Context, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pending = nil
		for _, name := range layout.ClusterNames() {
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
func (l *Lab) unavailable(ctx context.Context, cluster string) ([]string, error) {
	client := l.clusters[cluster].Client
	var out []string
	deployments, err := client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deployments.Items {
		if rollout.DeploymentPending(&d) != "" {
			out = append(out, fmt.Sprintf("%s/deployment/%s/%s (%d of %d available)", cluster, d.Namespace, d.Name, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1)))
		}
	}
	daemonSets, err := client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range daemonSets.Items {
		// One pod on every node.
		if d.Status.DesiredNumberScheduled != layout.NodesPerCluster || rollout.DaemonSetPending(&d) != "" {
			out = append(out, fmt.Sprintf("%s/daemonset/%s/%s (%d of %d available)", cluster, d.Namespace, d.Name, d.Status.NumberAvailable, layout.NodesPerCluster))
		}
	}
	return out, nil
}

// RecordPods records every running pod of the lab's workloads, the controllers among them with
// a forward to their admin port (the one they have when recorded before), and each cluster's
// CoreDNS.
func (l *Lab) RecordPods(ctx context.Context) error {
	before := l.Record()
	var pods []layout.Pod
	var controllers []layout.Controller
	var dns []layout.DNSServer
	for _, cluster := range layout.ClusterNames() {
		list, err := l.clusters[cluster].Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, pod := range list.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			p := before.PodOf(cluster, &pod)
			pods = append(pods, p)
			switch {
			case strings.HasPrefix(p.App, "semaphore-") && pod.Namespace == layout.SemaphoreNamespace:
				c, err := l.controllerOf(before, &pod, p)
				if err != nil {
					return fmt.Errorf("%s: pod %s: %w", cluster, pod.Name, err)
				}
				controllers = append(controllers, c)
			case p.App == "kube-dns" && pod.Namespace == dnsNamespace:
				dns = append(dns, layout.DNSServer{Cluster: cluster, Pod: pod.Name, Addr: net.JoinHostPort(p.IP, "53")})
			}
		}
	}
	slices.SortFunc(controllers, func(a, b layout.Controller) int {
		return cmp.Or(strings.Compare(a.Component, b.Component), strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.PodName, b.PodName))
	})
	if err := oneAgentPerNode(controllers); err != nil {
		return err
	}
	l.update(func(rec *layout.Record) { rec.Pods, rec.Controllers, rec.DNS = pods, controllers, dns })
	return nil
}

// oneAgentPerNode refuses a record with two pods of a DaemonSet on one node: the lab reads a
// node's agent as the one controller recorded there. A surged rollout runs the successor beside
// its predecessor until the predecessor is gone, so pods are recorded once a rollout is
// complete (WaitAvailable), when each node has one again.
func oneAgentPerNode(controllers []layout.Controller) error {
	seen := map[[3]string]string{}
	for _, c := range controllers {
		if c.Node == "" {
			continue
		}
		key := [3]string{c.Cluster, c.Component, c.Node}
		if other, ok := seen[key]; ok {
			return fmt.Errorf("%s: two pods of %s on node %s (%s and %s): record the pods once its rollout is complete", c.Cluster, c.Component, c.Node, other, c.PodName)
		}
		seen[key] = c.PodName
	}
	return nil
}

// ReplacePods records pods in place of the pods of app in cluster.
func (l *Lab) ReplacePods(cluster, app string, pods []layout.Pod) {
	l.update(func(rec *layout.Record) {
		rec.Pods = append(slices.DeleteFunc(slices.Clone(rec.Pods), func(p layout.Pod) bool {
			return p.Cluster == cluster && p.App == app
		}), pods...)
	})
}

// controllerOf is a Semaphore controller's pod, with a port of this machine's loopback
// forwarded to its admin port (through its provider's router, which routes every pod CIDR of
// the cluster); as before
// when it was recorded already.
func (l *Lab) controllerOf(before *layout.Record, pod *corev1.Pod, p layout.Pod) (layout.Controller, error) {
	if i := slices.IndexFunc(before.Controllers, func(c layout.Controller) bool { return c.PodUID == p.UID }); i >= 0 {
		return before.Controllers[i], nil
	}
	c := layout.Controller{
		Component: p.App, Cluster: p.Cluster, PodName: pod.Name, PodUID: p.UID, PodIP: p.IP, Log: p.Log,
	}
	if pod.Spec.HostNetwork {
		c.Node = pod.Spec.NodeName // a DaemonSet's pod: one per node (see oneAgentPerNode)
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
	admin, stop, err := testbed.ForwardFrom(layout.VPCNetns(p.Cluster), net.JoinHostPort(p.IP, strconv.Itoa(adminport.Of(pod))))
	if err != nil {
		return c, err
	}
	l.onTeardown(stop)
	c.Admin = admin
	return c, nil
}

// RediscoverControllers records the pods again (new controller pods get a port forward) and
// points Prometheus at the controllers that run now.
func (l *Lab) RediscoverControllers(ctx context.Context) error {
	if err := l.RecordPods(ctx); err != nil {
		return err
	}
	return l.ReloadPrometheus(ctx)
}
