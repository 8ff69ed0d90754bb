//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// nodesUnsupported says why this machine cannot have the lab's nodes, or returns "".
func nodesUnsupported() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces, veths and WireGuard devices need root (run the lab as root for them)"
	}
	// ip for the namespaces and links; unshare, sh and mount give each node's controller a
	// private /var/run (wireguard.go).
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

// forwardIntoNetns listens inside netns on addr, the address of something listening on this
// machine's loopback, and forwards every connection to it.
func forwardIntoNetns(netns, addr string) (stop func(), err error) {
	_, stop, err = testbed.ForwardInto(netns, addr, addr)
	return stop, err
}

// forwardFromNetns listens on a free port of this machine's 127.0.0.1 and forwards every
// connection to target, dialed inside netns: how the lab, `lab status` and Prometheus reach a
// node's admin server, which listens in the node's namespace. It returns the address it
// listens on, and stop, which closes the listener and every forwarded connection.
func forwardFromNetns(netns, target string) (addr string, stop func(), err error) {
	return testbed.ForwardFrom(netns, target)
}

// pingInNetns pings dst from src inside netns and returns the round-trip time.
func pingInNetns(netns, src, dst string, timeout time.Duration) (time.Duration, error) {
	return testbed.Ping(netns, src, dst, timeout)
}
