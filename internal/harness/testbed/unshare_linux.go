//go:build linux

package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The starting process's namespaces, which a child made by NamespacedCommand must not share.
const envParentNamespaces = "SEMAPHORE_TEST_PARENT_NAMESPACES"

// NamespacesUnavailable says why NamespacedCommand cannot make namespaces here, or "".
func NamespacesUnavailable() string {
	if os.Geteuid() != 0 {
		return "needs root: creates network and mount namespaces, devices and routes"
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return "needs unshare(1) from util-linux to create namespaces: " + err.Error()
	}
	if out, err := exec.Command("unshare", "--net", "--mount", "true").CombinedOutput(); err != nil {
		return fmt.Sprintf("cannot create namespaces here (unshare --net --mount: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// NamespacedCommand returns a command that runs this process's binary again with args in new
// network and mount namespaces, with env added to this process's environment, killed if we die.
// The child must call EnterNamespaces first thing. Whatever the child leaves behind (devices,
// routes, sockets under /run) dies with those namespaces.
func NamespacedCommand(env []string, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ns, err := namespaceIDs()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("unshare", append([]string{"--net", "--mount", "--propagation", "private", "--fork", "--kill-child", "--", exe}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), envParentNamespaces+"="+strings.Join(ns, ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// EnterNamespaces refuses to run in the namespaces of the process that started this one (the
// host's), then gives this process its own /run (and so /var/run/wireguard) and a loopback
// interface that is up.
func EnterNamespaces() error {
	self, err := namespaceIDs()
	if err != nil {
		return err
	}
	parents := os.Getenv(envParentNamespaces)
	if parents == "" {
		return fmt.Errorf("refusing to run: %s is not set, so the namespaces cannot be checked", envParentNamespaces)
	}
	for _, parent := range strings.Split(parents, ",") {
		if slices.Contains(self, parent) {
			return fmt.Errorf("refusing to run: still in the namespace %s of the process that started us", parent)
		}
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on /run: %w", err)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}

// namespaceIDs returns this process's network and mount namespaces, e.g. "net:[4026531840]".
func namespaceIDs() ([]string, error) {
	var ids []string
	for _, ns := range []string{"net", "mnt"} {
		id, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return nil, fmt.Errorf("read namespace: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
