// Package adminport finds the port of a Semaphore controller's admin server (/metrics,
// /healthz, /readyz) in its pod's spec, for the tools that read a controller from outside: the
// kubectl plugin and the lab.
package adminport

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Default is the port of the admin server when SEMAPHORE_ADMIN_ADDR is not set.
const Default = 8080

// Of is the port of pod's admin server: its container port named admin, else the port of
// SEMAPHORE_ADMIN_ADDR in its containers' environment (semaphore-wireguard's container declares
// no ports: on the host network they would be host ports, which keep a rollout's successor off
// the node), else Default.
func Of(pod *corev1.Pod) int {
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "admin" {
				return int(p.ContainerPort)
			}
		}
	}
	for _, ctr := range pod.Spec.Containers {
		for _, e := range ctr.Env {
			if e.Name != "SEMAPHORE_ADMIN_ADDR" {
				continue
			}
			if _, port, err := net.SplitHostPort(e.Value); err == nil {
				if n, err := strconv.Atoi(port); err == nil {
					return n
				}
			}
		}
	}
	return Default
}
