package adminport_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/internal/adminport"
)

// The admin port comes from the pod's container port named admin, else SEMAPHORE_ADMIN_ADDR,
// else the default.
func TestOfReadsThePortNamedAdminThenTheAdminAddress(t *testing.T) {
	pod := func(env string, ports ...corev1.ContainerPort) *corev1.Pod {
		c := corev1.Container{Name: "wireguard", Ports: ports}
		if env != "" {
			c.Env = []corev1.EnvVar{{Name: "SEMAPHORE_ADMIN_ADDR", Value: env}}
		}
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
	}{
		{pod(":9090", corev1.ContainerPort{Name: "wg-aws", ContainerPort: 51821}, corev1.ContainerPort{Name: "admin", ContainerPort: 8081}), 8081},
		{pod(":9090", corev1.ContainerPort{Name: "wg-aws", ContainerPort: 51821}), 9090},
		{pod(":9090"), 9090},
		{pod("0.0.0.0:not-a-port"), adminport.Default},
		{pod(""), adminport.Default},
	} {
		if got := adminport.Of(tc.pod); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.pod.Spec.Containers[0], got, tc.want)
		}
	}
}
