package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
)

// The sample workloads of the Semaphore blog post: fluentd in aws collects logs, and the
// forwarder pods in gcp send it theirs, through fluentd's mirror in gcp.
const (
	sampleNamespace  = "sys-log"
	fluentdCluster   = "aws"
	fluentdName      = "fluentd"
	fluentdReplicas  = 2
	forwarderCluster = "gcp"
	forwarderName    = "forwarder"
	forwarderCount   = 2

	mirrorLabel = "mirror.semaphore.uw.io/mirror-service"
	policyLabel = "policy.semaphore.uw.io/name"
)

var fluentdPorts = []struct {
	name string
	port int32
}{{"forward", 8888}, {"http", 8889}}

// createSampleWorkloads creates the sample workloads. No kube-controller-manager runs in the
// lab, so what it would do is done here: fluentd's EndpointSlice is written directly, and the
// forwarder pods get their IPs through the status subresource, as a kubelet would set them.
func (l *lab) createSampleWorkloads(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.createFluentd(ctx); err != nil {
		return fmt.Errorf("%s: %w", fluentdCluster, err)
	}
	if err := l.createForwarders(ctx); err != nil {
		return fmt.Errorf("%s: %w", forwarderCluster, err)
	}
	l.logf("created %s/%s/%s (mirrored, %d endpoints) and %d %s pods in %s/%s",
		fluentdCluster, sampleNamespace, fluentdName, fluentdReplicas, forwarderCount, forwarderName, forwarderCluster, sampleNamespace)
	return nil
}

// createFluentd creates the Service that opts in to mirroring, and its endpoints.
func (l *lab) createFluentd(ctx context.Context) error {
	c := l.clusters[fluentdCluster]
	if err := c.EnsureNamespace(ctx, sampleNamespace); err != nil {
		return err
	}
	app := map[string]string{"app.kubernetes.io/name": fluentdName}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fluentdName,
			Labels: map[string]string{"app.kubernetes.io/name": fluentdName, mirrorLabel: "true"},
		},
		Spec: corev1.ServiceSpec{Selector: app},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: fluentdName + "-",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: fluentdName,
				// What Kubernetes' own EndpointSlice controller would have written.
				discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range fluentdPorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: p.name, Port: p.port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(p.port),
		})
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{
			Name: ptr.To(p.name), Port: ptr.To(p.port), Protocol: ptr.To(corev1.ProtocolTCP),
		})
	}
	for i := range fluentdReplicas {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{podIP(fluentdCluster, i)},
			NodeName:  ptr.To(sampleNode(fluentdCluster, i)),
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
			},
		})
	}
	if _, err := c.Client.CoreV1().Services(sampleNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.Client.DiscoveryV1().EndpointSlices(sampleNamespace).Create(ctx, slice, metav1.CreateOptions{})
	return err
}

// createForwarders creates the pods that carry the policy label: semaphore-policy turns them
// into a GlobalNetworkSet in each of the other clusters (see expectedSets).
func (l *lab) createForwarders(ctx context.Context) error {
	c := l.clusters[forwarderCluster]
	// EnsureNamespace also creates the default ServiceAccount, which pods need.
	if err := c.EnsureNamespace(ctx, sampleNamespace); err != nil {
		return err
	}
	pods := c.Client.CoreV1().Pods(sampleNamespace)
	for i := range forwarderCount {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%d", forwarderName, i),
				Labels: map[string]string{"app.kubernetes.io/name": forwarderName, policyLabel: forwarderName},
			},
			Spec: corev1.PodSpec{
				// As the scheduler would have bound it.
				NodeName:   sampleNode(forwarderCluster, i),
				Containers: []corev1.Container{{Name: forwarderName, Image: "fluent/fluent-bit:3.2"}},
			},
		}
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		ip := podIP(forwarderCluster, i)
		created.Status = corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  ip,
			PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:    forwarderName,
				Image:   pod.Spec.Containers[0].Image,
				Ready:   true,
				Started: ptr.To(true),
				State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			}},
		}
		if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// sampleNode is the node the i-th sample pod of cluster runs on: the pods of a workload go
// round the cluster's nodes, so that each node of a cluster hosts one of them.
func sampleNode(cluster string, i int) string {
	return nodeName(cluster, i%nodesPerCluster)
}

// podIP is the address of the i-th sample pod in cluster, from its node's pod CIDR: a node's
// first sample pod gets host number 10 in it (198.18.1.10 on aws-node-1, 198.18.1.138 on
// aws-node-2), its next one 11, and so on.
func podIP(cluster string, i int) string {
	return addrAdd(nodePodCIDR(cluster, i%nodesPerCluster).Addr(), samplePodHost+i/nodesPerCluster).String()
}

// samplePodsByNode are the addresses of the sample pods (fluentd's endpoints and the
// forwarder pods) by node.
func samplePodsByNode() map[string][]string {
	out := map[string][]string{}
	for _, w := range []struct {
		cluster string
		count   int
	}{{fluentdCluster, fluentdReplicas}, {forwarderCluster, forwarderCount}} {
		for i := range w.count {
			n := sampleNode(w.cluster, i)
			out[n] = append(out[n], podIP(w.cluster, i))
		}
	}
	return out
}

// expectedMirror is a mirror the sample workloads must lead to, and the name under which the
// cluster's CoreDNS (when the lab runs one there) must resolve it.
type expectedMirror struct {
	Cluster   string
	Source    mirror.Source
	Endpoints []string
}

// Name is the mirror Service's name.
func (e expectedMirror) Name() string { return mirror.ServiceName(e.Source) }

// DNSName is the name docs/coredns.md makes resolve to the mirror.
func (e expectedMirror) DNSName() string {
	return fmt.Sprintf("%s.%s.svc.cluster.%s", e.Source.Name, e.Source.Namespace, e.Source.Cluster)
}

// expectedMirrors are fluentd's mirrors: one in every cluster but its own.
func expectedMirrors() []expectedMirror {
	src := mirror.Source{Cluster: fluentdCluster, Namespace: sampleNamespace, Name: fluentdName}
	var eps []string
	for i := range fluentdReplicas {
		eps = append(eps, podIP(fluentdCluster, i))
	}
	var out []expectedMirror
	for _, c := range remotesOf(fluentdCluster) {
		out = append(out, expectedMirror{Cluster: c, Source: src, Endpoints: eps})
	}
	return out
}
