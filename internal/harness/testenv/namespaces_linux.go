//go:build linux

package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// Tests that create network devices, routes or userspace WireGuard sockets run inside a
// private network namespace and a private mount namespace (with a tmpfs over /run, so
// /var/run/wireguard is theirs alone), never in the host's. RunInNamespaces re-executes the
// test binary under `unshare --net --mount` (testbed.NamespacedCommand); the child sees
// envInNamespaces, checks that it really is in new namespaces (testbed.EnterNamespaces), and
// runs the tests there. Whatever a test leaves behind dies with those namespaces.
const envInNamespaces = "SEMAPHORE_TEST_IN_NAMESPACES"

var (
	inNamespaces    bool   // the tests run inside private namespaces
	namespacesUnfit string // why they could not, when not
)

// RunInNamespaces is the body of a TestMain whose tests need root and a network of their own:
// it re-executes the test binary in new network and mount namespaces and returns its exit
// code. In the child (and when namespaces cannot be made here: -short, not root, no unshare(1))
// it runs the tests itself; tests that need the namespaces call RequireNamespaces and skip with
// the reason in the second case.
//
// Inside, there is no network but loopback (which is up) and /run is an empty tmpfs. Anything
// that needs the host's network must happen before: each prepare function runs in the parent,
// only when the namespaces will be used, and what it puts in the environment reaches the
// child (PrepareAPIServers resolves the API server binaries, which may have to be built from
// the module proxy).
func RunInNamespaces(m *testing.M, prepare ...func() error) int {
	if os.Getenv(envInNamespaces) != "" {
		if err := testbed.EnterNamespaces(); err != nil {
			fmt.Fprintf(os.Stderr, "tests in namespaces: %v\n", err)
			return 1
		}
		inNamespaces = true
		return m.Run()
	}
	if !flag.Parsed() {
		flag.Parse() // for testing.Short; m.Run does not parse the flags again
	}
	if testing.Short() {
		namespacesUnfit = "-short: needs root and network and mount namespaces of its own"
		return m.Run()
	}
	if namespacesUnfit = testbed.NamespacesUnavailable(); namespacesUnfit != "" {
		return m.Run() // tests that need the namespaces skip with namespacesUnfit
	}
	for _, p := range prepare {
		if err := p(); err != nil {
			fmt.Fprintf(os.Stderr, "tests in namespaces: preparing: %v\n", err)
			return 1
		}
	}
	runtime.LockOSThread() // Pdeathsig fires when the creating thread exits
	cmd, err := testbed.NamespacedCommand([]string{envInNamespaces + "=1"}, os.Args[1:]...)
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
// KUBEBUILDER_ASSETS. (testbed.StartCluster sets --advertise-address, without which
// kube-apiserver does not start in a namespace that has no default route.)
func PrepareAPIServers() error {
	assets, err := testbed.AssetsDir()
	if err != nil {
		return err
	}
	return os.Setenv("KUBEBUILDER_ASSETS", assets)
}

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

// ForwardInto forwards connections to a free port of 127.0.0.1 inside the named network
// namespace to target, dialed from the test's own namespace (see testbed.ForwardInto), and
// returns that port's address there. The forwarder stops when the test ends.
func ForwardInto(t testing.TB, netns, target string) string {
	t.Helper()
	addr, stop, err := testbed.ForwardInto(netns, "127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}
