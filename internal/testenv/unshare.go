//go:build linux

package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Tests that create network devices, routes or userspace WireGuard sockets run inside a
// private network namespace and a private mount namespace (with a tmpfs over /run, so
// /var/run/wireguard is theirs alone), never in the host's. RunInNamespaces re-executes the
// test binary under `unshare --net --mount`; the child sees envInNamespaces, checks that it
// really is in new namespaces, and runs the tests there. Whatever a test leaves behind dies
// with those namespaces.
const (
	envInNamespaces = "SEMAPHORE_TEST_IN_NAMESPACES"
	// envParentNamespaces names the starting process's namespaces, which the child must not share.
	envParentNamespaces = "SEMAPHORE_TEST_PARENT_NAMESPACES"
)

var (
	inNamespaces    bool   // the tests run inside private namespaces
	namespacesUnfit string // why they could not, when not
)

// RunInNamespaces is the body of a TestMain whose tests need root and a network of their own:
// it re-executes the test binary in new network and mount namespaces and returns its exit
// code. In the child (and when namespaces cannot be made here: not root, no unshare(1)) it runs
// the tests itself; tests that need the namespaces call RequireNamespaces and skip with the
// reason in the second case.
//
// Inside, there is no network but loopback (which is up) and /run is an empty tmpfs. Anything
// that needs the host's network must happen before: each prepare function runs in the parent,
// only when the namespaces will be used, and what it puts in the environment reaches the
// child (PrepareAPIServers resolves the API server binaries, which may have to be built from
// the module proxy).
func RunInNamespaces(m *testing.M, prepare ...func() error) int {
	if os.Getenv(envInNamespaces) != "" {
		if err := EnterNamespaces(); err != nil {
			fmt.Fprintf(os.Stderr, "tests in namespaces: %v\n", err)
			return 1
		}
		inNamespaces = true
		return m.Run()
	}
	if namespacesUnfit = NamespacesUnavailable(); namespacesUnfit != "" {
		return m.Run() // tests that need the namespaces skip with namespacesUnfit
	}
	for _, p := range prepare {
		if err := p(); err != nil {
			fmt.Fprintf(os.Stderr, "tests in namespaces: preparing: %v\n", err)
			return 1
		}
	}
	runtime.LockOSThread() // Pdeathsig fires when the creating thread exits
	cmd, err := NamespacedCommand([]string{envInNamespaces + "=1"}, os.Args[1:]...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tests in namespaces: %v\n", err)
		return 1
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "tests in namespaces: %v\n", err)
		return 1
	}
	return 0
}

// PrepareAPIServers is a prepare function for RunInNamespaces: it finds (or builds) the API
// server binaries while the network is still there, and hands them to the child in
// KUBEBUILDER_ASSETS. (StartCluster sets --advertise-address, without which kube-apiserver
// does not start in a namespace that has no default route.)
func PrepareAPIServers() error {
	assets, err := AssetsDir()
	if err != nil {
		return err
	}
	return os.Setenv("KUBEBUILDER_ASSETS", assets)
}

// InNamespaces reports whether the tests run inside the private namespaces of RunInNamespaces.
func InNamespaces() bool { return inNamespaces }

// RequireNamespaces skips the test unless it runs inside the private namespaces of
// RunInNamespaces, saying why they could not be made.
func RequireNamespaces(t testing.TB) {
	t.Helper()
	if !inNamespaces {
		reason := namespacesUnfit
		if reason == "" {
			reason = "TestMain does not run the tests through testenv.RunInNamespaces"
		}
		t.Skip(reason)
	}
}

// NamespacesUnavailable says why RunInNamespaces cannot make namespaces here, or "".
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

// NamespacedCommand returns a command that runs the test binary with args in new network and
// mount namespaces, with env added to this process's environment, killed if we die. The child
// must call EnterNamespaces first thing (RunInNamespaces does).
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
