package env

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// createGlobalService creates echo in every cluster and the client in GlobalCluster.
func (l *Lab) createGlobalService(ctx context.Context) error {
	for _, name := range layout.ClusterNames() {
		if err := l.createEcho(ctx, l.clusters[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	url := fmt.Sprintf("http://%s:%d/", layout.GlobalDNSName(), layout.GlobalPort)
	ctr := l.SampleContainer(layout.GlobalClientName, "send", "-url", url, "-interval", layout.GlobalInterval.String(), "-timeout", "1s")
	if err := l.CreateSampleDeployment(ctx, l.clusters[layout.GlobalCluster], layout.SampleNamespace, layout.GlobalClientName, 1, nil, nil, ctr); err != nil {
		return fmt.Errorf("%s: %w", layout.GlobalCluster, err)
	}
	return nil
}

// createEcho creates a cluster's echo and its Service, labelled as a local-first global service.
func (l *Lab) createEcho(ctx context.Context, c *testbed.Cluster) error {
	ctr := l.SampleContainer(layout.GlobalName, "serve", "-listen", fmt.Sprintf(":%d", layout.GlobalPort))
	ctr.Ports = []corev1.ContainerPort{{Name: layout.GlobalPortName, ContainerPort: layout.GlobalPort, Protocol: corev1.ProtocolTCP}}
	// Probed every second, so that a pod that comes back is an endpoint within a second.
	ctr.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(layout.GlobalPortName)}},
		PeriodSeconds: 1,
	}
	if err := l.CreateSampleDeployment(ctx, c, layout.SampleNamespace, layout.GlobalName, layout.GlobalReplicas, nil, nil, ctr); err != nil {
		return err
	}
	_, err := c.Client.CoreV1().Services(layout.SampleNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: layout.GlobalName,
			Labels: map[string]string{
				"app.kubernetes.io/name":    layout.GlobalName,
				global.LabelGlobalService:   "true",
				global.LabelRoutingStrategy: global.LocalFirst,
			},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": layout.GlobalName},
			Ports: []corev1.ServicePort{{
				Name: layout.GlobalPortName, Port: layout.GlobalPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(layout.GlobalPortName),
			}},
		},
	}, metav1.CreateOptions{})
	return err
}
