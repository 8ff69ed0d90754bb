package env

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// Every cluster's DNS: CoreDNS as kubeadm deploys it (a Deployment in kube-system behind the
// kube-dns Service at the address every kubelet gives its pods), running the Corefile of
// docs/coredns.md as it stands there, so that gcp's pods resolve
// fluentd.sys-log.svc.cluster.aws to fluentd's mirror exactly as the docs promise. The image
// is CoreDNS built by ci/coredns.sh, in the lab's registry.

const (
	dnsNamespace = testbed.CoreDNSNamespace
	dnsName      = "coredns"
	dnsService   = "kube-dns"
)

// createCoreDNS creates CoreDNS in every cluster.
func (l *Lab) createCoreDNS(ctx context.Context) error {
	corefile, err := testbed.DocsCorefile()
	if err != nil {
		return fmt.Errorf("docs/coredns.md: %w", err)
	}
	for _, spec := range layout.ClusterSpecs {
		if err := l.createClusterDNS(ctx, spec, corefile); err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	l.Logf("created CoreDNS in %s (kube-system/coredns, Service kube-dns; the Corefile of docs/coredns.md)", strings.Join(layout.ClusterNames(), ", "))
	return nil
}

// createClusterDNS creates a cluster's CoreDNS: its ServiceAccount with the ClusterRole of
// docs/coredns.md, its Corefile, its Deployment and the kube-dns Service. The Corefile's
// multicluster option also needs the MCS API's CRDs, which the chart installed before (its
// service-mirror's crds/): without them CoreDNS would never become ready.
func (l *Lab) createClusterDNS(ctx context.Context, spec layout.ClusterSpec, corefile string) error {
	client := l.clusters[spec.Name].Client
	app := map[string]string{"k8s-app": "kube-dns"}
	if err := testbed.GrantCoreDNSAccess(ctx, client); err != nil {
		return err
	}
	if _, err := client.CoreV1().ConfigMaps(dnsNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName},
		Data:       map[string]string{"Corefile": corefile},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := client.AppsV1().Deployments(dnsNamespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: dnsName, Labels: app},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: app},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app}, Spec: l.dnsPodSpec()},
		},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := client.CoreV1().Services(dnsNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService, Labels: app},
		Spec: corev1.ServiceSpec{
			Selector:  app,
			ClusterIP: spec.DNSServiceIP(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}, metav1.CreateOptions{})
	return err
}

// dnsPodSpec is the pod of CoreDNS, its Corefile mounted from the ConfigMap.
func (l *Lab) dnsPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName: testbed.CoreDNSServiceAccount,
		// The Corefile forwards what is not the cluster's to the resolvers of resolv.conf. The
		// lab's nodes have none (nothing may leave the machine), and CoreDNS refuses to start
		// without one: it gets an address on the lab's internet that nothing answers.
		DNSPolicy: corev1.DNSNone,
		DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{silentUpstreamDNS}},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true),
			// Port 53 without a capability: a safe sysctl, which the kubelet allows.
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "53"}},
		},
		Containers: []corev1.Container{{
			Name:  dnsName,
			Image: l.imageRef(corednsImage),
			Args:  []string{"-conf", "/etc/coredns/Corefile"},
			Ports: []corev1.ContainerPort{
				{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
			// The ready and health plugins of the Corefile.
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}},
			SecurityContext: restrictedContainer(),
		}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: dnsName}},
		}}},
	}
}

// restrictedContainer is the container securityContext of the lab's own pods: the restricted
// Pod Security Standard, like the chart's controllers.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsUser:                ptr.To(int64(65532)),
		RunAsGroup:               ptr.To(int64(65532)),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
