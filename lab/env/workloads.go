package env

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// fluentdPorts are the ports fluentd serves, by name.
var fluentdPorts = []struct {
	name string
	port int32
}{{"http", layout.FluentdPort}, {"forward", 8888}}

// createSampleWorkloads creates the sample workloads: Deployments of the lab's sample program
// (lab/cmd/sample, in the lab's registry), spread over the nodes of their cluster.
func (l *Lab) createSampleWorkloads(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.createFluentd(ctx); err != nil {
		return fmt.Errorf("%s: %w", layout.FluentdCluster, err)
	}
	if err := l.createForwarders(ctx); err != nil {
		return fmt.Errorf("%s: %w", layout.ForwarderCluster, err)
	}
	l.Logf("created %s/%s/%s (%d replicas, mirrored) and %s/%s/%s (%d replicas, in network sets)",
		layout.FluentdCluster, layout.SampleNamespace, layout.FluentdName, layout.FluentdReplicas, layout.ForwarderCluster, layout.SampleNamespace, layout.ForwarderName, layout.ForwarderCount)
	if err := l.createGlobalService(ctx); err != nil {
		return err
	}
	l.Logf("created %s/%s (%d replicas, a local-first global service) in %s, and %s/%s/%s",
		layout.SampleNamespace, layout.GlobalName, layout.GlobalReplicas, strings.Join(layout.ClusterNames(), ", "), layout.GlobalCluster, layout.SampleNamespace, layout.GlobalClientName)
	return nil
}

// createFluentd creates fluentd: the sample program serving both ports and logging every
// request with its client's address, and its Service, which opts in to mirroring.
func (l *Lab) createFluentd(ctx context.Context) error {
	c := l.clusters[layout.FluentdCluster]
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:   layout.FluentdName,
			Labels: map[string]string{"app.kubernetes.io/name": layout.FluentdName, layout.MirrorLabel: "true"},
		},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": layout.FluentdName}},
	}
	var listen []string
	var ports []corev1.ContainerPort
	for _, p := range fluentdPorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: p.name, Port: p.port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(p.name),
		})
		ports = append(ports, corev1.ContainerPort{Name: p.name, ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
		listen = append(listen, fmt.Sprintf(":%d", p.port))
	}
	ctr := l.SampleContainer(layout.FluentdName, "serve", "-listen", strings.Join(listen, ","))
	ctr.Ports = ports
	ctr.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(fluentdPorts[0].name)}}}
	// On the last node, from FluentdPool, whose one block the first node holds (calico.go):
	// calico-ipam lends fluentd addresses of that block, and the forwarders' requests reach
	// them through single-address routes inside another node's block.
	if err := l.holdFluentdBlock(ctx); err != nil {
		return err
	}
	// app=fluentd: what docs/policy.md's example policy selects fluentd by.
	d := sampleDeployment(layout.SampleNamespace, layout.FluentdName, layout.FluentdReplicas, map[string]string{"app": layout.FluentdName}, onNode(layout.CalicoCluster, layout.NodesPerCluster-1), ctr)
	d.Spec.Template.Annotations = fromPool(layout.FluentdPool)
	if err := createDeployment(ctx, c, d); err != nil {
		return err
	}
	_, err := c.Client.CoreV1().Services(layout.SampleNamespace).Create(ctx, svc, metav1.CreateOptions{})
	return err
}

// createForwarders creates the forwarders, which carry the policy label (semaphore-policy
// turns them into a GlobalNetworkSet in each of the other clusters) and send requests to
// fluentd in aws by the name docs/coredns.md gives its mirror.
func (l *Lab) createForwarders(ctx context.Context) error {
	url := fmt.Sprintf("http://%s.%s.svc.cluster.%s:%d/", layout.FluentdName, layout.SampleNamespace, layout.FluentdCluster, layout.FluentdPort)
	ctr := l.SampleContainer(layout.ForwarderName, "send", "-url", url, "-interval", "1s")
	return l.CreateSampleDeployment(ctx, l.clusters[layout.ForwarderCluster], layout.SampleNamespace, layout.ForwarderName, layout.ForwarderCount,
		map[string]string{layout.PolicyLabel: layout.ForwarderName}, nil, ctr)
}

// SampleContainer is a container of the sample program with args.
func (l *Lab) SampleContainer(name string, args ...string) corev1.Container {
	return corev1.Container{
		Name:  name,
		Image: l.imageRef(sampleImage),
		Args:  args,
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		SecurityContext: restrictedContainer(),
	}
}

// CreateSampleDeployment creates a Deployment of replicas pods of ctr in namespace,
// spread over the nodes nodeSelector selects (all when nil).
func (l *Lab) CreateSampleDeployment(ctx context.Context, c *testbed.Cluster, namespace, name string, replicas int32, extraLabels, nodeSelector map[string]string, ctr corev1.Container) error {
	return createDeployment(ctx, c, sampleDeployment(namespace, name, replicas, extraLabels, nodeSelector, ctr))
}

// createDeployment creates d in its namespace, which it creates first when missing.
func createDeployment(ctx context.Context, c *testbed.Cluster, d *appsv1.Deployment) error {
	if err := c.EnsureNamespace(ctx, d.Namespace); err != nil {
		return err
	}
	_, err := c.Client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
	return err
}

// sampleDeployment is the Deployment CreateSampleDeployment creates.
func sampleDeployment(namespace, name string, replicas int32, extraLabels, nodeSelector map[string]string, ctr corev1.Container) *appsv1.Deployment {
	app := map[string]string{"app.kubernetes.io/name": name}
	podLabels := maps.Clone(app)
	maps.Copy(podLabels, extraLabels)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: app},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: app},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers:                   []corev1.Container{ctr},
					NodeSelector:                 nodeSelector,
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: app},
					}},
				},
			},
		},
	}
}

// holdFluentdBlock runs BlockHolderName on CalicoCluster's first node, from FluentdPool, and
// waits until its pod has an address: the node has claimed the pool's one block. Without nodes
// there is nothing to hold.
func (l *Lab) holdFluentdBlock(ctx context.Context) error {
	if !l.NodesRun() {
		return nil // no pod runs, and no Calico
	}
	c := l.clusters[layout.CalicoCluster]
	d := sampleDeployment(layout.SampleNamespace, layout.BlockHolderName, 1, nil, onNode(layout.CalicoCluster, 0), l.SampleContainer(layout.BlockHolderName, "serve", "-listen", ":8080"))
	d.Spec.Template.Annotations = fromPool(layout.FluentdPool)
	if err := createDeployment(ctx, c, d); err != nil {
		return err
	}
	selector := "app.kubernetes.io/name=" + layout.BlockHolderName
	return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(layout.SampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(pods.Items) > 0 && pods.Items[0].Status.PodIP != "", nil
	})
}

// onNode is the node selector of cluster's i-th node.
func onNode(cluster string, i int) map[string]string {
	return map[string]string{corev1.LabelHostname: layout.NodeName(cluster, i)}
}

// fromPool is the annotation that makes calico-ipam take a pod's address from pool.
func fromPool(pool string) map[string]string {
	return map[string]string{"cni.projectcalico.org/ipv4pools": `["` + pool + `"]`}
}
