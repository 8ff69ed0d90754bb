//go:build linux

package datapath

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// TestDataPathCalicoIPAM runs the remote cluster aws the Calico way: its Nodes have no pod CIDR,
// and its pod addresses are described by IPAM blocks, which the gcp nodes read
// (SEMAPHORE_WG_POD_CIDRS_FROM=aws:calico-ipam). aws-node-1 has two blocks; aws-node-2 has one
// and holds an address borrowed from a block of aws-node-1. Pings from gcp reach every pod
// address through the tunnel and land on the node that holds it, the borrowed address on the
// borrower. Releasing a block takes its range off the device (allowed IPs and route) and stops
// traffic to it, and leaves the rest as it was. The way back uses gcp's Node pod CIDRs.
func TestDataPathCalicoIPAM(t *testing.T) {
	requireLab(t)
	began := time.Now()
	defer func() { t.Logf("Calico IPAM data-path test took %v", time.Since(began).Round(time.Millisecond)) }()

	fromIPAM := []string{"SEMAPHORE_WG_POD_CIDRS_FROM=aws:calico-ipam"}
	nodes := []*node{
		{name: "gcp-node-1", cluster: "gcp", remote: "aws", underlay: "192.0.2.11", podCIDR: "198.18.1.0/24", pod: "198.18.1.1", extraEnv: fromIPAM},
		{name: "gcp-node-2", cluster: "gcp", remote: "aws", underlay: "192.0.2.12", podCIDR: "198.18.2.0/24", pod: "198.18.2.1", extraEnv: fromIPAM},
		// No pod CIDR on the aws Nodes: their pod addresses come from the blocks below.
		{name: "aws-node-1", cluster: "aws", remote: "gcp", underlay: "192.0.2.21", pod: "10.1.1.1", morePods: []string{"10.1.1.65"}},
		{name: "aws-node-2", cluster: "aws", remote: "gcp", underlay: "192.0.2.22", pod: "10.1.1.129", morePods: []string{"10.1.1.70"}},
	}
	gcp1, gcp2, aws1, aws2 := nodes[0], nodes[1], nodes[2], nodes[3]
	gcpNodes, awsNodes := []*node{gcp1, gcp2}, []*node{aws1, aws2}

	crds := testenv.CRDs("wireguard")
	byName := newLab(t, testenv.Options{CRDDirs: []string{crds}}, nodes)
	ctx := context.Background()
	blocks := ipamBlocks(t, byName["aws"])

	// The blocks exist before the controllers start, so each gcp device gets every aws peer
	// with all of its prefixes at once.
	released := netip.MustParsePrefix("10.1.1.0/26")
	blocks.create(t, released, aws1, map[string]*node{"10.1.1.1": aws1})
	blocks.create(t, netip.MustParsePrefix("10.1.1.64/26"), aws1, map[string]*node{"10.1.1.65": aws1, "10.1.1.70": aws2})
	blocks.create(t, netip.MustParsePrefix("10.1.1.128/26"), aws2, map[string]*node{"10.1.1.129": aws2})
	startControllers(t, nodes)

	// 1. Every node publishes its public key and endpoint for the other cluster.
	waitAnnotated(ctx, t, nodes, byName)
	keys := map[*node]wgtypes.Key{}
	for _, n := range awsNodes {
		k, err := wgtypes.ParseKey(annotation(t, byName["aws"], n.name, peers.PubKeyAnnotation("gcp")))
		if err != nil {
			t.Fatal(err)
		}
		keys[n] = k
	}

	// 2. The gcp devices hold both aws nodes as peers, with the blocks affine to each and the
	// address borrowed by aws-node-2 as a /32 of its own, as allowed IPs and as routes. The
	// aws devices route gcp's Node pod CIDRs, as in node mode.
	allowed := map[*node][]string{
		aws1: {"10.1.1.0/26", "10.1.1.64/26"},
		aws2: {"10.1.1.128/26", "10.1.1.70/32"},
	}
	eventually(t, nodes, wait, "gcp devices with the aws peers and their IPAM prefixes", func() error {
		for _, g := range gcpNodes {
			if err := g.checkPeers(awsNodes); err != nil {
				return err
			}
			if err := g.checkAllowedIPs(keys, allowed); err != nil {
				return err
			}
			if err := g.checkRouteDsts(slices.Concat(allowed[aws1], allowed[aws2])); err != nil {
				return err
			}
		}
		for _, a := range awsNodes {
			if err := a.checkPeers(gcpNodes); err != nil {
				return err
			}
			if err := a.checkRoutes(gcpNodes); err != nil {
				return err
			}
		}
		return nil
	})
	for _, g := range gcpNodes {
		if err := g.checkNoSkippedBlocks(); err != nil {
			t.Error(err)
		}
	}

	// 3. From every gcp node, each pod address answers, through wg-aws, from the node that
	// holds it: both blocks of aws-node-1 on aws-node-1, the borrowed address on aws-node-2
	// although its block is aws-node-1's.
	holders := []struct {
		addr string
		node *node
	}{{"10.1.1.1", aws1}, {"10.1.1.65", aws1}, {"10.1.1.70", aws2}, {"10.1.1.129", aws2}}
	for _, g := range gcpNodes {
		for _, h := range holders {
			eventually(t, nodes, 20*time.Second, fmt.Sprintf("ping %s -> %s on %s", g.pod, h.addr, h.node), func() error {
				return g.pingReaches(h.addr, h.node, awsNodes)
			})
		}
	}
	// Only additions so far: one peer per remote node, one route per prefix.
	for _, g := range gcpNodes {
		if err := g.checkChanges(map[string]float64{"peer_add": 2, "peer_update": 0, "peer_remove": 0, "route_add": 4, "route_remove": 0}); err != nil {
			t.Error(err)
		}
	}
	awsChanges := map[string]float64{"peer_add": 2, "peer_update": 0, "peer_remove": 0, "route_add": 2, "route_remove": 0}
	for _, a := range awsNodes {
		if err := a.checkChanges(awsChanges); err != nil {
			t.Error(err)
		}
	}

	// 4. The block 10.1.1.0/26 released: its prefix leaves aws-node-1's allowed IPs and the
	// routes of wg-aws on every gcp node; aws-node-1 keeps its other block and aws-node-2
	// everything. Only aws-node-1's peer is updated; no peer is added or removed.
	blocks.delete(t, released)
	allowed[aws1] = []string{"10.1.1.64/26"}
	eventually(t, nodes, wait, "released block off the gcp devices", func() error {
		for _, g := range gcpNodes {
			if err := g.checkAllowedIPs(keys, allowed); err != nil {
				return err
			}
			if err := g.checkRouteDsts(slices.Concat(allowed[aws1], allowed[aws2])); err != nil {
				return err
			}
		}
		return nil
	})
	for _, g := range gcpNodes {
		if err := g.checkPeers(awsNodes); err != nil {
			t.Error(err)
		}
		if err := g.checkChanges(map[string]float64{"peer_add": 2, "peer_update": 1, "peer_remove": 0, "route_add": 4, "route_remove": 1}); err != nil {
			t.Error(err)
		}
		if err := pingFails(g.netns, g.pod, "10.1.1.1"); err != nil {
			t.Errorf("after block %s was released: %v", released, err)
		}
		for _, h := range holders {
			if released.Contains(netip.MustParseAddr(h.addr)) {
				continue
			}
			if err := g.pingReaches(h.addr, h.node, awsNodes); err != nil {
				t.Errorf("after block %s was released: %v", released, err)
			}
		}
	}
	for _, a := range awsNodes {
		if err := a.checkChanges(awsChanges); err != nil {
			t.Error(err)
		}
	}
}

// blockClient writes the IPAM blocks of one cluster.
type blockClient struct{ c dynamic.ResourceInterface }

func ipamBlocks(t *testing.T, c *testenv.Cluster) blockClient {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return blockClient{dyn.Resource(calicoipam.Resource)}
}

// create writes the block cidr affine to node, with each address of holders allocated to a pod
// on the node it maps to.
func (b blockClient) create(t *testing.T, cidr netip.Prefix, affine *node, holders map[string]*node) {
	t.Helper()
	byAddr := map[netip.Addr]string{}
	for a, n := range holders {
		byAddr[netip.MustParseAddr(a)] = n.name
	}
	obj, err := calicoipam.Object(cidr, affine.name, byAddr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating IPAM block %s: %v", cidr, err)
	}
}

func (b blockClient) delete(t *testing.T, cidr netip.Prefix) {
	t.Helper()
	if err := b.c.Delete(context.Background(), calicoipam.BlockName(cidr), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting IPAM block %s: %v", cidr, err)
	}
}

// checkAllowedIPs checks that n's device has exactly the peers of want, by their keys, each with
// exactly its allowed IPs.
func (n *node) checkAllowedIPs(keys map[*node]wgtypes.Key, want map[*node][]string) error {
	got, err := n.allowedIPs()
	if err != nil {
		return n.alive(err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d peers on %s, want %d", n, len(got), n.device(), len(want))
	}
	for w, ips := range want {
		have, ok := got[keys[w]]
		if !ok {
			return fmt.Errorf("%s: no peer for %s on %s", n, w, n.device())
		}
		if want := slices.Sorted(slices.Values(ips)); !slices.Equal(have, want) {
			return fmt.Errorf("%s: allowed IPs of %s on %s: %q, want %q", n, w, n.device(), have, want)
		}
	}
	return nil
}

// allowedIPs reads the sorted allowed IPs of every peer of n's userspace device, by public key.
func (n *node) allowedIPs() (map[wgtypes.Key][]string, error) {
	sock, err := n.wireguardSocket()
	if err != nil {
		return nil, err
	}
	byText, err := testbed.WireGuardAllowedIPs(sock)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n, err)
	}
	out := map[wgtypes.Key][]string{}
	for text, ips := range byText {
		k, err := wgtypes.ParseKey(text)
		if err != nil {
			return nil, err
		}
		slices.Sort(ips)
		out[k] = ips
	}
	return out, nil
}

// checkNoSkippedBlocks checks that n's controller routes every IPAM block of its remote.
func (n *node) checkNoSkippedBlocks() error {
	ss, err := scrape(n.netns)
	if err != nil {
		return fmt.Errorf("%s: scraping metrics: %w", n, err)
	}
	sum, series := testbed.SampleSum(ss, "semaphore_wg_skipped_ipam_blocks", map[string]string{"remote": n.remote})
	if series == 0 || sum != 0 {
		return fmt.Errorf("%s: semaphore_wg_skipped_ipam_blocks{remote=%q} = %v over %d series, want 0 over the reasons", n, n.remote, sum, series)
	}
	return nil
}

// pingReaches pings dst from n's pod address and checks the path: the kernel routes dst to n's
// device, and of nodes (the remote nodes) exactly holder, where dst lives, has had the echo
// request delivered out of its tunnel. Nothing but the test's pings crosses the tunnels, so
// the count of packets a node's device delivered to its kernel tells where the ping went.
func (n *node) pingReaches(dst string, holder *node, nodes []*node) error {
	out, err := exec.Command("ip", "-n", n.netns, "-o", "-4", "route", "get", dst, "from", n.pod).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: ip route get %s: %w: %s", n, dst, err, out)
	}
	if f := strings.Fields(string(out)); !slices.Contains(f, "dev") || f[slices.Index(f, "dev")+1] != n.device() {
		return fmt.Errorf("%s: %s is not routed via %s: %s", n, dst, n.device(), out)
	}
	before := map[*node]uint64{}
	for _, r := range nodes {
		if before[r], err = r.delivered(); err != nil {
			return err
		}
	}
	if err := ping(n.netns, n.pod, dst, 2*time.Second); err != nil {
		return n.alive(err)
	}
	for _, r := range nodes {
		after, err := r.delivered()
		if err != nil {
			return err
		}
		switch got := after - before[r]; {
		case r == holder && got == 0:
			return fmt.Errorf("%s: %s answered, but %s, which holds it, had nothing from its tunnel", n, dst, r)
		case r != holder && got != 0:
			return fmt.Errorf("%s: ping to %s (on %s) went to %s: %d packet(s) out of its tunnel", n, dst, holder, r, got)
		}
	}
	return nil
}

// delivered is how many packets n's device has handed to n's kernel: for a userspace device,
// the received packets of its TUN interface, which count decrypted data only (keepalives and
// handshakes stay in WireGuard).
func (n *node) delivered() (uint64, error) {
	out, err := exec.Command("ip", "-n", n.netns, "-s", "-j", "link", "show", "dev", n.device()).CombinedOutput()
	if err != nil {
		return 0, n.alive(fmt.Errorf("%s: ip link show %s: %w: %s", n, n.device(), err, out))
	}
	var links []struct {
		Stats struct {
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return 0, fmt.Errorf("%s: ip -j link show %s: %d links in %s (%w)", n, n.device(), len(links), out, err)
	}
	return links[0].Stats.RX.Packets, nil
}
