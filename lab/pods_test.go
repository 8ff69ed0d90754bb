package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A variable moves with the pod's files when its value is a path inside a relocated mount, or
// a directory above one (SEMAPHORE_REMOTES_DIR holds a mount per remote); paths the program
// uses where they are (/dev, /var/run) and values that are not paths stay.
func TestInsideMount(t *testing.T) {
	ctr := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "remote-aws", MountPath: "/etc/semaphore/remotes/aws"},
		{Name: "keys", MountPath: "/var/lib/semaphore-wireguard/"},
		{Name: "tun", MountPath: "/dev/net/tun"},
		{Name: "wireguard-run", MountPath: "/var/run/wireguard"},
	}}
	p := &labPod{}
	for value, want := range map[string]bool{
		"/etc/semaphore/remotes":                true,
		"/etc/semaphore/remotes/aws/kubeconfig": true,
		"/var/lib/semaphore-wireguard":          true,
		"/etc/semaphore/remotes-other":          false,
		"/etc":                                  true, // above a mount: the program would look into it
		"/dev/net/tun":                          false,
		"/var/run/wireguard":                    false,
		"/var/run":                              false,
		":8080":                                 false,
		"semaphore":                             false,
		"/etc/semaphore/remotes/aws/../aws/token": true,
	} {
		if got := p.insideMount(ctr, value); got != want {
			t.Errorf("insideMount(%q) = %v, want %v", value, got, want)
		}
	}
}
