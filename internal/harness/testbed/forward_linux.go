//go:build linux

package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ForwardInto opens a TCP listener on addr (host:port; port 0 picks a free one) inside
// the named network namespace and forwards every connection to target (host:port), dialed from
// the caller's own network namespace. It returns the listener's host:port as seen inside the
// namespace, and stop, which closes the listener and every forwarded connection. This is how
// processes in a namespace reach an API server listening on the host's loopback without any
// interface or address being added to the host.
func ForwardInto(netns, addr, target string) (listening string, stop func(), err error) {
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
	return ln.Addr().String(), forward(ln, target, net.Dial).Close, nil
}

// ForwardFrom is ForwardInto the other way round: it opens a TCP listener on a free
// port of 127.0.0.1 in the caller's network namespace and forwards every connection to target
// (host:port), dialed from inside the named network namespace. This is how the host reaches a
// pod's port that only exists on a node's network.
func ForwardFrom(netns, target string) (listening string, stop func(), err error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return "", nil, fmt.Errorf("forwarder from %s: target %q: %w", netns, target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	f := forward(ln, target, func(network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return DialInNetns(ctx, netns, network, addr)
	})
	return ln.Addr().String(), f.Close, nil
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
