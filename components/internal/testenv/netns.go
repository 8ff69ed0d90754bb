//go:build linux

package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// NetnsDir is where `ip netns add` keeps its named network namespaces.
const NetnsDir = "/run/netns"

// InNetns runs f on an OS thread switched into the named network namespace (one made by
// `ip netns add`). Sockets f creates stay in that namespace after f returns and can be used
// from any goroutine; everything else the program does stays in its own namespace.
//
// The thread is switched back afterwards; if that fails, the thread is left locked so that the
// Go runtime discards it rather than run other goroutines in the wrong namespace.
func InNetns(netns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored := false
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open(filepath.Join(NetnsDir, netns))
		if err != nil {
			restored = true
			errc <- fmt.Errorf("network namespace %s: %w", netns, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			restored = true
			errc <- fmt.Errorf("entering network namespace %s: %w", netns, err)
			return
		}
		ferr := f()
		restored = unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil
		errc <- ferr
	}()
	return <-errc
}

// DialInNetns dials addr from inside the named network namespace.
func DialInNetns(ctx context.Context, netns, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := InNetns(netns, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// HTTPClientInNetns is an HTTP client whose connections are made from inside the named
// network namespace, e.g. to scrape a component listening on 127.0.0.1 there.
func HTTPClientInNetns(netns string) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return DialInNetns(ctx, netns, network, addr)
			},
		},
	}
}

// ForwardInto opens a TCP listener on 127.0.0.1 (a free port) inside the named network
// namespace and forwards every connection to target (host:port), dialed from the test's own
// network namespace. It returns the listener's host:port as seen inside the namespace. This is
// how processes in a namespace reach an API server listening on the host's loopback without
// any interface or address being added to the host. It stops when the test ends.
func ForwardInto(t testing.TB, netns, target string) string {
	t.Helper()
	if _, _, err := net.SplitHostPort(target); err != nil {
		t.Fatalf("forwarder into %s: target %q: %v", netns, target, err)
	}
	var ln net.Listener
	err := InNetns(netns, func() error {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatalf("forwarder into %s: %v", netns, err)
	}
	// The cluster proxy's forwarding, on a listener that lives in the namespace.
	f := &proxy{addr: ln.Addr().String(), backend: target, conns: map[net.Conn]struct{}{}}
	f.serve(ln)
	t.Cleanup(f.Close)
	return ln.Addr().String()
}
