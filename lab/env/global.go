package env

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// A global service: echo in sys-log, the sample program serving HTTP and logging every request
// with its client, in every cluster behind a Service of the same name labelled as global and
// local-first. semaphore-service-mirror serves it in every cluster as the selector-less
// semaphore/gl-sys-log-73736d-echo, with the EndpointSlices of all three clusters, the local
// cluster's endpoints zone-hinted for the local Nodes' zones and the others' for none of them:
// kube-proxy then sends to the local endpoints while any is ready, and to the other clusters'
// when none is. gcp's echo-client asks for it as echo.sys-log.svc.cluster.global, which the
// Corefile of docs/coredns.md resolves to the global Service. `lab check` scales gcp's echo to
// zero and back, and measures where the client's requests go.
const (
	GlobalName           = "echo"
	GlobalReplicas int32 = 2
	globalPortName       = "http"
	GlobalPort     int32 = 8080
	// GlobalCluster runs the client, and is the cluster whose echo the check takes away.
	GlobalCluster    = "gcp"
	GlobalClientName = "echo-client"
	// GlobalInterval is the client's time between requests: often enough to time a failover
	// to a fifth of a second.
	GlobalInterval = 200 * time.Millisecond
)

// GlobalKey is the global service of the lab.
var GlobalKey = global.Key{Namespace: SampleNamespace, Name: GlobalName}

// GlobalDNSName is the name the Corefile of docs/coredns.md resolves to the global Service.
func GlobalDNSName() string {
	return fmt.Sprintf("%s.%s.svc.cluster.global", GlobalKey.Name, GlobalKey.Namespace)
}

// GlobalPorts are the ports of echo's Service in every cluster, and so of the global Service,
// as the status prints them.
var GlobalPorts = []string{fmt.Sprintf("%s:%d/%s", globalPortName, GlobalPort, corev1.ProtocolTCP)}

// createGlobalService creates echo in every cluster and the client in GlobalCluster.
func (l *Lab) createGlobalService(ctx context.Context) error {
	for _, name := range ClusterNames() {
		if err := l.createEcho(ctx, l.clusters[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	url := fmt.Sprintf("http://%s:%d/", GlobalDNSName(), GlobalPort)
	ctr := l.SampleContainer(GlobalClientName, "send", "-url", url, "-interval", GlobalInterval.String(), "-timeout", "1s")
	if err := l.CreateSampleDeployment(ctx, l.clusters[GlobalCluster], SampleNamespace, GlobalClientName, 1, nil, nil, ctr); err != nil {
		return fmt.Errorf("%s: %w", GlobalCluster, err)
	}
	return nil
}

// createEcho creates a cluster's echo and its Service, labelled as a local-first global service.
func (l *Lab) createEcho(ctx context.Context, c *testbed.Cluster) error {
	ctr := l.SampleContainer(GlobalName, "serve", "-listen", fmt.Sprintf(":%d", GlobalPort))
	ctr.Ports = []corev1.ContainerPort{{Name: globalPortName, ContainerPort: GlobalPort, Protocol: corev1.ProtocolTCP}}
	// Probed every second, so that a pod that comes back is an endpoint within a second.
	ctr.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(globalPortName)}},
		PeriodSeconds: 1,
	}
	if err := l.CreateSampleDeployment(ctx, c, SampleNamespace, GlobalName, GlobalReplicas, nil, nil, ctr); err != nil {
		return err
	}
	_, err := c.Client.CoreV1().Services(SampleNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: GlobalName,
			Labels: map[string]string{
				"app.kubernetes.io/name":    GlobalName,
				global.LabelGlobalService:   "true",
				global.LabelRoutingStrategy: global.LocalFirst,
			},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": GlobalName},
			Ports: []corev1.ServicePort{{
				Name: globalPortName, Port: GlobalPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(globalPortName),
			}},
		},
	}, metav1.CreateOptions{})
	return err
}
