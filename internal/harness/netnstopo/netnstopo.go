// Package netnstopo builds the network of simulated nodes on one machine, for the lab and the
// tests that run real node programs: a network namespace per node, joined by a veth to a bridge
// in a namespace of its own (the underlay), with the nodes' addresses and routes. Every link is
// created directly in the namespace it belongs to, so that deleting the namespaces deletes
// everything, and nothing is ever created in the machine's own network namespace. It runs
// iproute2's ip, which needs root.
package netnstopo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Dir is where `ip netns add` keeps its named network namespaces.
const Dir = "/run/netns"

// IP runs ip with each of args in turn, stopping at the first that fails.
func IP(args ...[]string) error {
	for _, a := range args {
		if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(a, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// AddNetns creates the network namespace name, with its loopback up.
func AddNetns(name string) error {
	return IP(
		[]string{"netns", "add", name},
		[]string{"-n", name, "link", "set", "lo", "up"},
	)
}

// DeleteNetns deletes the network namespace name, and with it every link and address in it.
func DeleteNetns(name string) error {
	return IP([]string{"netns", "del", name})
}

// Exists tells whether the network namespace name exists.
func Exists(name string) bool {
	_, err := os.Stat(filepath.Join(Dir, name))
	return err == nil
}

// Underlay is the bridge that joins the nodes, in a network namespace of its own.
type Underlay struct {
	Netns, Bridge string
}

// AddBridge creates the underlay's bridge, up, with addrs (in CIDR notation) on it. The
// namespace must exist.
func (u Underlay) AddBridge(addrs ...string) error {
	cmds := [][]string{
		{"-n", u.Netns, "link", "add", u.Bridge, "type", "bridge"},
		{"-n", u.Netns, "link", "set", u.Bridge, "up"},
	}
	for _, a := range addrs {
		cmds = append(cmds, []string{"-n", u.Netns, "addr", "add", a, "dev", u.Bridge})
	}
	return IP(cmds...)
}

// Node is a simulated node's place on the underlay.
type Node struct {
	Netns string
	// Link is the node's end of its veth to the underlay, Port the underlay's end, a port of
	// the bridge.
	Link, Port string
	// Addr is the node's address on the underlay, in CIDR notation: 198.19.0.11/24.
	Addr string
}

// Join joins node n to the underlay: a veth from n's namespace (which must exist) to a port of
// the bridge, with n's address on n's end, both ends up.
func (u Underlay) Join(n Node) error {
	return IP(
		[]string{"-n", n.Netns, "link", "add", n.Link, "type", "veth", "peer", "name", n.Port, "netns", u.Netns},
		[]string{"-n", u.Netns, "link", "set", n.Port, "master", u.Bridge, "up"},
		[]string{"-n", n.Netns, "addr", "add", n.Addr, "dev", n.Link},
		[]string{"-n", n.Netns, "link", "set", n.Link, "up"},
	)
}

// AddRoutes adds routes to netns, each the arguments of `ip route add`: {dst, "via", gateway}
// or {dst, "dev", link}.
func AddRoutes(netns string, routes ...[]string) error {
	cmds := make([][]string, len(routes))
	for i, r := range routes {
		cmds[i] = append([]string{"-n", netns, "route", "add"}, r...)
	}
	return IP(cmds...)
}

// AddLocalAddrs gives netns addrs (single addresses, /32) as its own, on a dummy interface
// named dummy, or on the loopback where the kernel has no dummy driver: either way addresses
// the namespace answers for, like a node its pods' gateway or a simulated pod's.
func AddLocalAddrs(netns, dummy string, addrs ...string) error {
	if IP([]string{"-n", netns, "link", "add", dummy, "type", "dummy"}) != nil {
		dummy = "lo"
	}
	var cmds [][]string
	for _, a := range addrs {
		cmds = append(cmds, []string{"-n", netns, "addr", "add", a + "/32", "dev", dummy})
	}
	return IP(append(cmds, []string{"-n", netns, "link", "set", dummy, "up"})...)
}
