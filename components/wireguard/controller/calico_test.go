package controller_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// putBlock creates or replaces aws's IPAM block of cidr, affine to node ("" for none), with
// holders (address -> node) allocated, as calico-ipam would.
func putBlock(t *testing.T, cidr, node string, holders map[string]string) {
	t.Helper()
	h := map[netip.Addr]string{}
	for a, n := range holders {
		h[netip.MustParseAddr(a)] = n
	}
	u, err := calicoipam.Object(netip.MustParsePrefix(cidr), node, h)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, u)
}

func putObject(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	blocks := awsBlocks(t)
	old, err := blocks.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err == nil {
		u.SetResourceVersion(old.GetResourceVersion())
		_, err = blocks.Update(ctx, u, metav1.UpdateOptions{})
	} else {
		_, err = blocks.Create(ctx, u, metav1.CreateOptions{})
		name := u.GetName()
		t.Cleanup(func() { _ = blocks.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

func awsBlocks(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(aws.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(calicoipam.Resource)
}

func deleteBlock(t *testing.T, cidr string) {
	t.Helper()
	name := calicoipam.BlockName(netip.MustParsePrefix(cidr))
	if err := awsBlocks(t).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// With calico-ipam, each aws peer's allowed IPs and the routes are the blocks affine to its node
// and the addresses its pods borrowed; a new block, a borrowed address, a block moving to
// another node, a released block and a block being deleted each change only the peers
// concerned, one operation per peer; bad blocks are skipped and counted and change nothing;
// nothing happens at rest or on restart.
func TestPeersFollowRemoteIPAMBlocks(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	devKey, k1, k2 := devicetest.Key(t), devicetest.Key(t), devicetest.Key(t)
	remoteNode(t, "aws-c1", k1.PublicKey(), "192.0.2.31:51822") // the Calico way: no podCIDR
	remoteNode(t, "aws-c2", k2.PublicKey(), "192.0.2.32:51822")
	remoteNode(t, "aws-c3", devicetest.Key(t).PublicKey(), "192.0.2.33:51822") // no block, nothing borrowed
	putBlock(t, "10.1.1.0/26", "aws-c1", map[string]string{"10.1.1.1": "aws-c1", "10.1.1.2": "aws-c2"})
	putBlock(t, "10.1.1.64/26", "aws-c1", nil)
	putBlock(t, "10.1.1.128/26", "aws-c2", map[string]string{"10.1.1.130": "aws-c2"})

	devs := devicetest.New()
	r := startReading(t, devs, devKey, controller.Sources{All: controller.SourceCalicoIPAM})
	c1, c2 := k1.PublicKey().String(), k2.PublicKey().String()
	// expect makes a change and waits for the device to hold want, in ops peer operations
	// (any number when ops is negative).
	expect := func(what string, ops int, change func(), want map[string][]string) {
		t.Helper()
		before := devs.Counts().PeerChanges
		change()
		var routes []string
		for _, ips := range want {
			routes = append(routes, ips...)
		}
		sort.Strings(routes)
		testenv.Eventually(t, 30*time.Second, what, func() error {
			got := devs.AllowedIPs("wg-aws")
			gotRoutes := devs.Routes("wg-aws")
			if fmt.Sprint(got) != fmt.Sprint(want) || !slices.Equal(gotRoutes, routes) {
				return fmt.Errorf("allowed IPs %v routes %v, want %v %v", got, gotRoutes, want, routes)
			}
			return nil
		})
		if now := devs.Counts().PeerChanges; ops >= 0 && now-before != ops {
			t.Errorf("%s took %d peer operations, want %d", what, now-before, ops)
		}
	}
	expect("peers from the blocks", -1, func() {}, map[string][]string{
		c1: {"10.1.1.0/26", "10.1.1.64/26"},
		c2: {"10.1.1.128/26", "10.1.1.2/32"},
	})
	testenv.Eventually(t, 10*time.Second, "a node without blocks skipped", func() error {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_peers", map[string]string{"remote": "aws", "reason": peers.ReasonNoPodCIDR}); v != 1 {
			return fmt.Errorf("skipped_peers{reason=no_pod_cidr} = %v", v)
		}
		return nil
	})

	expect("a new block", 1, func() { putBlock(t, "10.1.1.192/26", "aws-c2", nil) }, map[string][]string{c1: {"10.1.1.0/26", "10.1.1.64/26"}, c2: {"10.1.1.128/26", "10.1.1.192/26", "10.1.1.2/32"}})

	expect("a borrowed address", 1, func() { putBlock(t, "10.1.1.64/26", "aws-c1", map[string]string{"10.1.1.70": "aws-c2"}) }, map[string][]string{c1: {"10.1.1.0/26", "10.1.1.64/26"}, c2: {"10.1.1.128/26", "10.1.1.192/26", "10.1.1.2/32", "10.1.1.70/32"}})

	expect("a block moved to another node", 2, func() { putBlock(t, "10.1.1.128/26", "aws-c1", map[string]string{"10.1.1.130": "aws-c2"}) }, map[string][]string{
		c1: {"10.1.1.0/26", "10.1.1.128/26", "10.1.1.64/26"},
		c2: {"10.1.1.130/32", "10.1.1.192/26", "10.1.1.2/32", "10.1.1.70/32"},
	})

	expect("a released block", 1, func() { deleteBlock(t, "10.1.1.192/26") }, map[string][]string{
		c1: {"10.1.1.0/26", "10.1.1.128/26", "10.1.1.64/26"},
		c2: {"10.1.1.130/32", "10.1.1.2/32", "10.1.1.70/32"},
	})

	deleting, err := calicoipam.Object(netip.MustParsePrefix("10.1.1.0/26"), "aws-c1", map[netip.Addr]string{netip.MustParseAddr("10.1.1.1"): "aws-c1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(deleting.Object, true, "spec", "deleted"); err != nil {
		t.Fatal(err)
	}
	expect("a block being deleted", 2, func() { putObject(t, deleting) }, map[string][]string{
		c1: {"10.1.1.128/26", "10.1.1.64/26"},
		c2: {"10.1.1.130/32", "10.1.1.70/32"},
	})

	// Bad blocks: skipped, counted, and no peer changes.
	before := devs.Counts().PeerChanges
	bad, err := calicoipam.Object(netip.MustParsePrefix("10.1.9.0/26"), "aws-c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(bad.Object, "10.1.9.0/33", "spec", "cidr"); err != nil {
		t.Fatal(err)
	}
	putObject(t, bad)
	// Overlapping older blocks. Creation times have a resolution of a second, so the name, which
	// breaks ties, sorts after theirs too.
	overlapping, err := calicoipam.Object(netip.MustParsePrefix("10.1.1.0/25"), "aws-c2", nil)
	if err != nil {
		t.Fatal(err)
	}
	overlapping.SetName("z-10-1-1-0-25")
	putObject(t, overlapping)
	putBlock(t, "10.1.8.0/26", "", nil)                     // no affinity
	putBlock(t, "198.18.21.64/26", "aws-c2", nil)           // gcp-node-1's own pod range
	putBlock(t, "10.1.7.0/26", "aws-c1", map[string]string{ // fine, but its node is not a peer yet
		"10.1.7.9": "aws-c4"})
	want := map[string]float64{calicoipam.ReasonBadCIDR: 1, calicoipam.ReasonNoAffinity: 1, calicoipam.ReasonLocal: 1, calicoipam.ReasonOverlapping: 1}
	testenv.Eventually(t, 30*time.Second, "bad blocks counted", func() error {
		for reason, n := range want {
			if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_ipam_blocks", map[string]string{"remote": "aws", "reason": reason}); v != n {
				return fmt.Errorf("skipped_ipam_blocks{reason=%s} = %v, want %v", reason, v, n)
			}
		}
		return nil
	})
	expect("bad blocks left out", -1, func() {}, map[string][]string{
		c1: {"10.1.1.128/26", "10.1.1.64/26", "10.1.7.0/26"},
		c2: {"10.1.1.130/32", "10.1.1.70/32"},
	})
	if now := devs.Counts().PeerChanges; now-before != 1 {
		t.Errorf("bad blocks and one good one took %d peer operations, want 1 (the good block)", now-before)
	}

	// At rest and on restart: nothing.
	configs := devs.Counts().Configs
	testenv.Hold(t, 2*time.Second, "no change at rest", func() error {
		if now := devs.Counts().Configs; now != configs {
			return fmt.Errorf("%d device configurations at rest", now-configs)
		}
		return nil
	})
	r.Stop()
	expectNoReconfiguration(t, startReading(t, devs, devKey, controller.Sources{All: controller.SourceCalicoIPAM}), devs, configs)
}
