package status

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// The pods' containers as this machine sees them: what the status and the checks read from
// inside a controller's container (its WireGuard devices, its credentials).

// serviceAccountDir is where a pod's ServiceAccount token is mounted: what tells a pod's
// application container from its sandbox.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// roots are the containers' roots by pod UID: finding one reads every process's cgroups.
var roots sync.Map

// ContainerRoot is the root directory of the application container of the pod with uid, as
// this machine sees it (/proc/<pid>/root): the pod's process that the kubelet gave the pod's
// ServiceAccount token.
func ContainerRoot(uid string) (string, error) {
	if r, ok := roots.Load(uid); ok {
		if _, err := os.Stat(filepath.Join(r.(string), serviceAccountDir)); err == nil {
			return r.(string), nil
		}
	}
	r, err := testbed.PodProcessRoot(uid, serviceAccountDir)
	if err == nil {
		roots.Store(uid, r)
	}
	return r, err
}

// ServiceAccountToken is the path of the ServiceAccount token in a container whose root is
// root.
func ServiceAccountToken(root string) string {
	return filepath.Join(root, serviceAccountDir, "token")
}

// DeviceAllowedIPs reads the allowed IPs of every peer of device name, by public key (base64),
// from its UAPI socket in the container whose root is root: the embedded (userspace)
// WireGuard's, which the chart keeps in the container's /var/run/wireguard.
func DeviceAllowedIPs(root, name string) (map[string][]string, error) {
	return testbed.WireGuardAllowedIPs(filepath.Join(root, "/var/run/wireguard", name+".sock"))
}
