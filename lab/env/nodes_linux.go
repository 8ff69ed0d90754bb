//go:build linux

package env

import (
	"fmt"
	"os"
	"os/exec"
)

// nodesUnsupported says why this machine cannot have the lab's nodes, or returns "".
func nodesUnsupported() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces, veths and WireGuard devices need root (run the lab as root for them)"
	}
	// ip for the namespaces and links; unshare, sh and mount give each node's controller a
	// private /var/run.
	for _, tool := range []string{"ip", "unshare", "sh", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is missing: %v", tool, err)
		}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Sprintf("userspace WireGuard needs /dev/net/tun: %v", err)
	}
	return ""
}
