package testbed

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
)

// Resolver returns a resolver that sends every query to the DNS server at addr, ignoring
// /etc/resolv.conf. (Its errors still name a server from /etc/resolv.conf: the resolver picks
// that address before Dial ignores it.)
func Resolver(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// LookupHost resolves name (A and AAAA) at the DNS server at addr and returns the addresses
// sorted. name is always treated as fully qualified, so no search domains are tried.
func LookupHost(ctx context.Context, addr, name string) ([]string, error) {
	return lookupHost(ctx, Resolver(addr), addr, name)
}

func lookupHost(ctx context.Context, r *net.Resolver, addr, name string) ([]string, error) {
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	addrs, err := r.LookupHost(ctx, name)
	if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) {
		dnsErr.Server = addr
	}
	slices.Sort(addrs)
	return addrs, err
}
