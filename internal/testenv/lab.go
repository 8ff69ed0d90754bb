//go:build linux

package testenv

import (
	"context"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// What the lab still calls here until it uses testbed itself.

// ForwardIntoNetns is testbed.ForwardInto.
func ForwardIntoNetns(netns, addr, target string) (string, func(), error) {
	return testbed.ForwardInto(netns, addr, target)
}

// ForwardFromNetns is testbed.ForwardFrom.
func ForwardFromNetns(netns, target string) (string, func(), error) {
	return testbed.ForwardFrom(netns, target)
}

// LookupHostInNetns is testbed.LookupHostInNetns.
func LookupHostInNetns(ctx context.Context, netns, addr, name string) ([]string, error) {
	return testbed.LookupHostInNetns(ctx, netns, addr, name)
}

// CoreDNSBinary is testbed.CoreDNSBinary.
func CoreDNSBinary() (string, error) { return testbed.CoreDNSBinary() }

// DocsCorefile is testbed.DocsCorefile.
func DocsCorefile() (string, error) { return testbed.DocsCorefile() }
