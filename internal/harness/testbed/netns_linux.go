//go:build linux

package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// NetnsDir is where `ip netns add` keeps its named network namespaces.
const NetnsDir = "/run/netns"

// InNetns runs f on an OS thread switched into the named network namespace (one made by
// `ip netns add`), or the one at an absolute path (a process's, /proc/<pid>/ns/net). Sockets f creates stay in that namespace after f returns and can be used
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
		path := netns
		if !filepath.IsAbs(path) {
			path = filepath.Join(NetnsDir, netns)
		}
		target, err := os.Open(path)
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

// LookupHostInNetns is LookupHost with the queries sent from inside the named network
// namespace, to a DNS server (a pod's) that only exists on the network there.
func LookupHostInNetns(ctx context.Context, netns, addr, name string) ([]string, error) {
	r := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return DialInNetns(ctx, netns, network, addr)
		},
	}
	return lookupHost(ctx, r, addr, name)
}
