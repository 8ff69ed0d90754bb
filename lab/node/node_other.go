//go:build !linux

package node

import (
	"context"
	"errors"
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
