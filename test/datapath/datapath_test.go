//go:build linux

// Package datapath holds the data-path test of semaphore-wireguard: real API servers for two
// clusters, every node a network namespace running the real binary with userspace WireGuard,
// real handshakes and real pings between pod addresses of the two clusters.
package datapath

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

const (
	// listenPort is every device's UDP port, as it goes into an endpoint and the environment.
	listenPort = "51821"
	// routeProto is the protocol number that marks the controller's routes (device.RouteProtocol).
	routeProto = "83"
	// foreignRoute is a route via a WireGuard device that the controller did not create and
	// must leave alone.
	foreignRoute = "198.18.200.0/24"
	// userAgent prefixes the user agent of every API request the controller makes.
	userAgent = "semaphore-wireguard"
	// wait bounds every wait of this test.
	wait = 60 * time.Second
)

func TestDataPath(t *testing.T) {
	requireLab(t)
	began := time.Now()
	defer func() { t.Logf("data-path test took %v", time.Since(began).Round(time.Millisecond)) }()

	nodes := []*node{
		{name: "gcp-node-1", cluster: "gcp", remote: "aws", underlay: "192.0.2.11", podCIDR: "198.18.1.0/24", pod: "198.18.1.1"},
		{name: "gcp-node-2", cluster: "gcp", remote: "aws", underlay: "192.0.2.12", podCIDR: "198.18.2.0/24", pod: "198.18.2.1"},
		{name: "aws-node-1", cluster: "aws", remote: "gcp", underlay: "192.0.2.21", podCIDR: "198.18.11.0/24", pod: "198.18.11.1"},
		{name: "aws-node-2", cluster: "aws", remote: "gcp", underlay: "192.0.2.22", podCIDR: "198.18.12.0/24", pod: "198.18.12.1"},
	}
	gcp1, gcp2, aws1, aws2 := nodes[0], nodes[1], nodes[2], nodes[3]
	byName := newLab(t, testenv.Options{Audit: true}, nodes)
	ctx := context.Background()
	startControllers(t, nodes)

	// 1. Every node publishes, for the other cluster, the public key of its key file and its
	// underlay endpoint.
	waitAnnotated(ctx, t, nodes, byName)
	pubKeys := map[string]string{}
	for _, n := range nodes {
		pubKeys[n.name] = annotation(t, byName[n.cluster], n.name, peers.PubKeyAnnotation(n.remote))
	}

	// 2. Every device holds both nodes of the other cluster as peers, has shaken hands with
	// them (keepalive 1s starts the handshake) and routes their pod CIDRs.
	peersOf := func(n *node) []*node {
		if n.cluster == "gcp" {
			return []*node{aws1, aws2}
		}
		return []*node{gcp1, gcp2}
	}
	eventually(t, nodes, wait, "devices with peers and handshakes", func() error {
		for _, n := range nodes {
			if err := n.checkPeers(peersOf(n)); err != nil {
				return err
			}
			if err := n.checkRoutes(peersOf(n)); err != nil {
				return err
			}
		}
		return nil
	})

	// 3. Pod addresses reach each other across the clusters, in both directions.
	for _, g := range []*node{gcp1, gcp2} {
		for _, a := range []*node{aws1, aws2} {
			for _, pair := range [][2]*node{{g, a}, {a, g}} {
				from, to := pair[0], pair[1]
				eventually(t, nodes, 20*time.Second, fmt.Sprintf("ping %s -> %s", from.pod, to.pod), func() error {
					return from.alive(ping(from.netns, from.pod, to.pod, 2*time.Second))
				})
			}
		}
	}
	// Only additions so far: one per remote node, no updates, no removals.
	for _, n := range nodes {
		if err := n.checkChanges(map[string]float64{"peer_add": 2, "peer_update": 0, "peer_remove": 0, "route_add": 2, "route_remove": 0}); err != nil {
			t.Error(err)
		}
	}

	// 4. A remote node deleted: its peer and route go on every gcp node, a route someone
	// else put on the device stays, and the ping to that node's pod stops working while
	// the other aws node still answers.
	run(t, "ip", "-n", gcp1.netns, "route", "add", foreignRoute, "dev", gcp1.device())
	if err := byName["aws"].Client.CoreV1().Nodes().Delete(ctx, aws1.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, nodes, wait, "peer and route of the deleted node removed", func() error {
		for _, g := range []*node{gcp1, gcp2} {
			if err := g.checkPeers([]*node{aws2}); err != nil {
				return err
			}
			if err := g.checkRoutes([]*node{aws2}); err != nil {
				return err
			}
		}
		return nil
	})
	if routes := gcp1.routes(t, ""); !slices.Contains(routes, foreignRoute) {
		t.Errorf("route %s we did not create was removed from %s on %s; routes now: %q", foreignRoute, gcp1.device(), gcp1, routes)
	}
	for _, g := range []*node{gcp1, gcp2} {
		if err := g.checkChanges(map[string]float64{"peer_add": 2, "peer_update": 0, "peer_remove": 1, "route_add": 2, "route_remove": 1}); err != nil {
			t.Error(err)
		}
		if err := pingFails(g.netns, g.pod, aws1.pod); err != nil {
			t.Error(err)
		}
		if err := ping(g.netns, g.pod, aws2.pod, 2*time.Second); err != nil {
			t.Errorf("after %s was deleted, %s can no longer reach %s: %v", aws1, g, aws2.pod, err)
		}
	}

	// 5. Restart of gcp-node-1's controller with the same key directory: the key file is
	// reused as it is, the annotation stays and is not even rewritten, and traffic flows again.
	//
	// In userspace mode the device's link outlives the controller, kept for the next one,
	// but its sessions live in the process: the restart means a new handshake. "An in-sync
	// device is not reconfigured and its handshakes survive a restart" holds for kernel
	// WireGuard only; these machines have no WireGuard kernel module, so what this test can
	// show is: the link kept, same key file, same annotation (not even rewritten), no change
	// on the remote side, and traffic flowing again.
	keyBefore := readKeyFile(t, gcp1)
	writesBefore := nodeWrites(t, byName["gcp"], gcp1.name)
	gcp1.stop(t)
	if out, err := exec.Command("ip", "-n", gcp1.netns, "link", "show", gcp1.device()).CombinedOutput(); err != nil {
		t.Errorf("%s: the link of userspace device %s went away with its controller, want it kept for the next: %v: %s", gcp1, gcp1.device(), err, out)
	}
	restarted := time.Now()
	gcp1.start(t)
	eventually(t, nodes, wait, "restarted gcp-node-1 peers with aws-node-2 again", func() error {
		if err := gcp1.checkPeers([]*node{aws2}); err != nil {
			return err
		}
		if hs := gcp1.handshake(aws2); hs < float64(restarted.Unix()) {
			return fmt.Errorf("%s: no handshake with %s since the restart (last %v)", gcp1, aws2, hs)
		}
		return gcp1.checkRoutes([]*node{aws2})
	})
	eventually(t, nodes, 20*time.Second, "ping after restart", func() error {
		return gcp1.alive(ping(gcp1.netns, gcp1.pod, aws2.pod, 2*time.Second))
	})
	if keyAfter := readKeyFile(t, gcp1); !bytes.Equal(keyAfter, keyBefore) {
		t.Errorf("key file %s changed across the restart", gcp1.keyFile())
	}
	if got := annotation(t, byName["gcp"], gcp1.name, peers.PubKeyAnnotation("aws")); got != pubKeys[gcp1.name] {
		t.Errorf("pubKey annotation of %s changed across the restart: %q, was %q", gcp1, got, pubKeys[gcp1.name])
	}
	if err := checkAnnotations(ctx, byName["gcp"], gcp1); err != nil {
		t.Error(err)
	}
	if writesAfter := nodeWrites(t, byName["gcp"], gcp1.name); len(writesAfter) > len(writesBefore) {
		t.Errorf("the restarted controller wrote its in-sync Node again:%v", writesAfter[len(writesBefore):])
	}
	if logs, _ := os.ReadFile(gcp1.logPath); bytes.Count(logs, []byte("generated a private key")) != 1 {
		t.Errorf("%s: want exactly one \"generated a private key\" log line over two starts, got %d", gcp1, bytes.Count(logs, []byte("generated a private key")))
	}
	// The peer of gcp-node-1 on aws-node-2 never changed: same key, same endpoint.
	if err := aws2.checkChanges(map[string]float64{"peer_add": 2, "peer_update": 0, "peer_remove": 0}); err != nil {
		t.Error(err)
	}
}
