//go:build linux

package testenv

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
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

// ForwardIntoNetns opens a TCP listener on addr (host:port; port 0 picks a free one) inside
// the named network namespace and forwards every connection to target (host:port), dialed from
// the caller's own network namespace. It returns the listener's host:port as seen inside the
// namespace, and stop, which closes the listener and every forwarded connection. This is how
// processes in a namespace reach an API server listening on the host's loopback without any
// interface or address being added to the host.
func ForwardIntoNetns(netns, addr, target string) (listening string, stop func(), err error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return "", nil, fmt.Errorf("forwarder into %s: target %q: %w", netns, target, err)
	}
	var ln net.Listener
	err = InNetns(netns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("forwarder into %s: %w", netns, err)
	}
	// The cluster proxy's forwarding, on a listener that lives in the namespace.
	f := &proxy{addr: ln.Addr().String(), backend: target, conns: map[net.Conn]struct{}{}}
	f.serve(ln)
	return ln.Addr().String(), f.Close, nil
}

// ForwardFromNetns is ForwardIntoNetns the other way round: it opens a TCP listener on a free
// port of 127.0.0.1 in the caller's network namespace and forwards every connection to target
// (host:port), dialed from inside the named network namespace. This is how the host reaches a
// pod's port that only exists on a node's network.
func ForwardFromNetns(netns, target string) (listening string, stop func(), err error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return "", nil, fmt.Errorf("forwarder from %s: target %q: %w", netns, target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	f := &proxy{addr: ln.Addr().String(), backend: target, conns: map[net.Conn]struct{}{},
		dial: func(network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return DialInNetns(ctx, netns, network, addr)
		}}
	f.serve(ln)
	return ln.Addr().String(), f.Close, nil
}

// ForwardInto is ForwardIntoNetns on a free port of 127.0.0.1, for a test: it fails the test
// when the forwarder cannot start, and stops it when the test ends.
func ForwardInto(t testing.TB, netns, target string) string {
	t.Helper()
	addr, stop, err := ForwardIntoNetns(netns, "127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// Ping sends one ICMP echo request from src to dst inside the named network namespace and
// waits up to timeout for the reply, like `ping -c 1 -W timeout -I src dst` but without a ping
// binary. It returns the round-trip time. It needs CAP_NET_RAW (a raw ICMP socket).
func Ping(netns, src, dst string, timeout time.Duration) (time.Duration, error) {
	var c net.PacketConn
	if err := InNetns(netns, func() error {
		var err error
		c, err = net.ListenPacket("ip4:icmp", src)
		return err
	}); err != nil {
		return 0, fmt.Errorf("ping %s -> %s in %s: %w", src, dst, netns, err)
	}
	defer c.Close()
	// Every raw ICMP socket of the namespace sees every reply: a random id and sequence number
	// pick out ours, so pings may run concurrently.
	var idb [4]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return 0, err
	}
	id, seq := binary.BigEndian.Uint16(idb[:2]), binary.BigEndian.Uint16(idb[2:])
	msg, err := (&icmp.Message{
		Type: ipv4.ICMPTypeEcho,
		Body: &icmp.Echo{ID: int(id), Seq: int(seq), Data: []byte("semaphore-wireguard data path")},
	}).Marshal(nil)
	if err != nil {
		return 0, err
	}
	sent := time.Now()
	if _, err := c.WriteTo(msg, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
		return 0, fmt.Errorf("ping %s -> %s in %s: %w", src, dst, netns, err)
	}
	if err := c.SetReadDeadline(sent.Add(timeout)); err != nil {
		return 0, err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("ping %s -> %s in %s: no reply: %w", src, dst, netns, err)
		}
		if from.String() != dst {
			continue
		}
		reply, err := icmp.ParseMessage(ipv4.ICMPTypeEchoReply.Protocol(), buf[:n])
		if err != nil || reply.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		if echo, ok := reply.Body.(*icmp.Echo); ok && echo.ID == int(id) && echo.Seq == int(seq) {
			return time.Since(sent), nil
		}
	}
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
