//go:build !linux

package node

import (
	"context"
	"errors"
	"time"
)

// Node is a running node (Linux only).
type Node struct{}

var errUnsupported = errors.New("the lab's nodes need Linux (network namespaces, cgroups)")

// Start fails: nodes need Linux.
func Start(ctx context.Context, cfg Config) (*Node, error) { return nil, errUnsupported }

// Stop does nothing.
func (n *Node) Stop() error { return nil }

// PIDs is empty.
func (n *Node) PIDs() []int { return nil }

// Cleanup does nothing: no node ran here.
func Cleanup(name string, privateDirs ...string) error { return nil }

// Share is a CPU share (Linux only).
type Share struct{}

// NewShare fails: shares are cgroups.
func NewShare(name string, shares int) (*Share, error) { return nil, errUnsupported }

// Add does nothing.
func (s *Share) Add(pid int) error { return errUnsupported }

// Usage is 0.
func (s *Share) Usage() time.Duration { return 0 }

// Close does nothing.
func (s *Share) Close() error { return nil }

// RemoveShares does nothing: no share was made here.
func RemoveShares() error { return nil }

// ShareCgroups is empty.
func ShareCgroups() []string { return nil }
