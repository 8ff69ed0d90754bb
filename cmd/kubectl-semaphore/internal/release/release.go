// Package release finds the Semaphore controllers installed in a cluster (the workloads of the
// semaphore chart) and what they are configured with: the local cluster's name, the remotes,
// and each remote's credentials exactly as the controllers' pods get them.
package release

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
)

// Component names, the app.kubernetes.io/component label of the chart's workloads.
const (
	ServiceMirror = "service-mirror"
	Policy        = "policy"
	WireGuard     = "wireguard"
)

// PartOf selects the chart's workloads.
const PartOf = "app.kubernetes.io/part-of=semaphore"

// Component is one controller of a release: its workload and the configuration its pod
// template gives it.
type Component struct {
	// Name is service-mirror, policy or wireguard.
	Name string
	// Kind is Deployment or DaemonSet; Namespace and Workload name it.
	Kind, Namespace, Workload string
	// selector selects the workload's pods.
	selector labels.Selector
	// Template is the workload's pod template.
	Template corev1.PodTemplateSpec
	// Env are the literal environment variables of the component's container.
	Env map[string]string
}

// WorkloadRef names the component's workload as messages do: Kind namespace/name.
func (c Component) WorkloadRef() string {
	return fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Workload)
}

// LocalCluster is the name the component gives the local cluster (SEMAPHORE_LOCAL_CLUSTER).
func (c Component) LocalCluster() string { return c.Env["SEMAPHORE_LOCAL_CLUSTER"] }

// RemoteNames are the remotes the component reads (SEMAPHORE_REMOTES).
func (c Component) RemoteNames() []string {
	var out []string
	for _, r := range strings.Split(c.Env["SEMAPHORE_REMOTES"], ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// PodRangesEnv holds the ranges each remote's pod addresses must lie in (addrguard.Ranges).
const PodRangesEnv = "SEMAPHORE_REMOTE_POD_RANGES"

// PodRanges are the ranges each remote's pod addresses must lie in, as the component is
// configured (SEMAPHORE_REMOTE_POD_RANGES); a remote with none is held to addrguard's rules alone.
func (c Component) PodRanges() (addrguard.Ranges, error) {
	var r addrguard.Ranges
	if err := r.Decode(c.Env[PodRangesEnv]); err != nil {
		return nil, fmt.Errorf("%s: %w", PodRangesEnv, err)
	}
	return r, nil
}

// MCSEnabledEnv turns on the service mirror's Multi-Cluster Services API (the chart's
// serviceMirror.mcs.enabled).
const MCSEnabledEnv = "SEMAPHORE_MCS_ENABLED"

// ServesMCS reports whether the component is a service mirror that serves the Multi-Cluster
// Services API: SEMAPHORE_MCS_ENABLED true (off by default, as the service mirror reads it).
func (c Component) ServesMCS() bool {
	on, err := strconv.ParseBool(c.Env[MCSEnabledEnv])
	return c.Name == ServiceMirror && err == nil && on
}

// Where names the namespace a search looks in, for messages: "any namespace" for "" (every
// namespace, as Find takes it), else "namespace <namespace>".
func Where(namespace string) string {
	if namespace == "" {
		return "any namespace"
	}
	return "namespace " + namespace
}

// Find returns the Semaphore components in namespace ("" for every namespace), sorted by
// namespace and name.
func Find(ctx context.Context, client kubernetes.Interface, namespace string) ([]Component, error) {
	opts := metav1.ListOptions{LabelSelector: PartOf}
	deployments, err := client.AppsV1().Deployments(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing Semaphore's Deployments: %w", err)
	}
	daemonSets, err := client.AppsV1().DaemonSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing Semaphore's DaemonSets: %w", err)
	}
	var out []Component
	for _, d := range deployments.Items {
		if c, ok := component("Deployment", d.ObjectMeta, d.Spec.Selector, d.Spec.Template); ok {
			out = append(out, c)
		}
	}
	for _, d := range daemonSets.Items {
		if c, ok := component("DaemonSet", d.ObjectMeta, d.Spec.Selector, d.Spec.Template); ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Component) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

func component(kind string, meta metav1.ObjectMeta, selector *metav1.LabelSelector, template corev1.PodTemplateSpec) (Component, bool) {
	name := meta.Labels["app.kubernetes.io/component"]
	if !slices.Contains([]string{ServiceMirror, Policy, WireGuard}, name) {
		return Component{}, false
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return Component{}, false
	}
	c := Component{Name: name, Kind: kind, Namespace: meta.Namespace, Workload: meta.Name, selector: sel, Template: template, Env: map[string]string{}}
	if ctr := c.Container(); ctr != nil {
		for _, e := range ctr.Env {
			if e.ValueFrom == nil {
				c.Env[e.Name] = e.Value
			}
		}
	}
	return c, true
}

// Container is the component's own container in its pod template: the one named like it, else
// the first (nil when the template has none).
func (c Component) Container() *corev1.Container {
	ctrs := c.Template.Spec.Containers
	for i := range ctrs {
		if ctrs[i].Name == c.Name {
			return &ctrs[i]
		}
	}
	if len(ctrs) > 0 {
		return &ctrs[0]
	}
	return nil
}

// MetricPrefix starts the name of every metric of each component, by component name (its
// app.MetricsPrefix).
var MetricPrefix = map[string]string{
	ServiceMirror: "semaphore_service_mirror",
	Policy:        "semaphore_policy",
	WireGuard:     "semaphore_wg",
}

// MetricName is the full name of component's metric name: remote_up of policy is
// semaphore_policy_remote_up.
func MetricName(component, name string) string { return MetricPrefix[component] + "_" + name }

// DescribePod names pod of c in messages: with its node for a DaemonSet's, marked as the
// leader when it holds c's Lease (leader, "" when c elects none or it is not known).
func (c Component) DescribePod(pod *corev1.Pod, leader string) string {
	switch {
	case c.Kind == "DaemonSet":
		return fmt.Sprintf("pod %s (node %s)", pod.Name, pod.Spec.NodeName)
	case leader != "" && pod.Name == leader:
		return "pod " + pod.Name + " (leader)"
	}
	return "pod " + pod.Name
}
