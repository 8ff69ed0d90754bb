//go:build linux

package datapath

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// gcp reaches aws through gateways: gcp-node-1 and gcp-node-2 are its gateway nodes, gcp-node-3
// is not one; aws is a mesh toward gcp. The active gateway alone peers with aws's nodes, each of
// which has it as its one peer for every gcp pod; the other gcp nodes route aws's pods to it over
// gcp's network (the underlay), and pods of every gcp node and every aws node reach each other,
// with their own addresses. A gateway stopped (a rollout) is replaced by the standby, which the
// traffic then takes; back, it stays a standby; a gateway killed (its node lost) is replaced
// once its Lease runs out.
func TestDataPathThroughGateways(t *testing.T) {
	requireLab(t)
	gatewayEnv := []string{"SEMAPHORE_WG_TOPOLOGY=gateway", "POD_NAMESPACE=default"}
	nodes := []*node{
		{name: "gcp-node-1", cluster: "gcp", remote: "aws", underlay: "192.0.2.11", podCIDR: "198.18.1.0/24", pod: "198.18.1.1", extraEnv: gatewayEnv},
		{name: "gcp-node-2", cluster: "gcp", remote: "aws", underlay: "192.0.2.12", podCIDR: "198.18.2.0/24", pod: "198.18.2.1", extraEnv: gatewayEnv},
		{name: "gcp-node-3", cluster: "gcp", remote: "aws", underlay: "192.0.2.13", podCIDR: "198.18.3.0/24", pod: "198.18.3.1", extraEnv: gatewayEnv},
		{name: "aws-node-1", cluster: "aws", remote: "gcp", underlay: "192.0.2.21", podCIDR: "198.18.11.0/24", pod: "198.18.11.1"},
		{name: "aws-node-2", cluster: "aws", remote: "gcp", underlay: "192.0.2.22", podCIDR: "198.18.12.0/24", pod: "198.18.12.1"},
	}
	gcp1, gcp2, gcp3 := nodes[0], nodes[1], nodes[2]
	gcpNodes, awsNodes := nodes[:3], nodes[3:]
	byName := newLab(t, testenv.Options{}, nodes)
	clusterNetwork(t, gcpNodes)
	for _, g := range []*node{gcp1, gcp2} {
		labelGateway(t, byName["gcp"], g)
	}
	startControllers(t, nodes)

	gw, standby := waitGateway(t, nodes, byName["gcp"], gcp1, gcp2)
	checkThroughGateway(t, nodes, gw, standby, gcp3, awsNodes)
	pingAll(t, nodes, gcpNodes, awsNodes)

	// A rollout stops the gateway's agent: it releases its Lease, the standby takes over.
	fail := failover{t: t, nodes: nodes, gcp: byName["gcp"], member: gcp3, aws: awsNodes}
	next := fail.over(gw, standby, "stopped", gw.stop)
	// Back, the old gateway is a standby: its pods go through the new one.
	gw.start(t)
	checkThroughGateway(t, nodes, next, gw, gcp3, awsNodes)
	pingAll(t, nodes, gcpNodes, awsNodes)
	// The gateway's node lost (its agent killed, its Lease not released): the standby takes
	// over once the Lease runs out.
	fail.over(next, gw, "killed", next.kill)
}

// failover is a data-path test's view of gcp's gateways toward aws.
type failover struct {
	t      *testing.T
	nodes  []*node
	gcp    *testenv.Cluster
	member *node
	aws    []*node
}

// over ends gateway's agent with end, waits until standby is the gateway and the member's and
// standby's pods reach aws again, logs how long that took, and returns standby.
func (f failover) over(gateway, standby *node, how string, end func(*testing.T)) *node {
	f.t.Helper()
	ended := time.Now()
	end(f.t)
	next, _ := waitGateway(f.t, f.nodes, f.gcp, standby)
	pingAll(f.t, f.nodes, []*node{next, f.member}, f.aws)
	f.t.Logf("gateway %s %s: %s's pods reach aws through %s %s later", gateway, how, f.member, next, time.Since(ended).Round(10*time.Millisecond))
	return next
}

// clusterNetwork routes each node's pod CIDR from the others through its underlay address, as
// the cluster's network (Calico) does, and lets every node forward, as a Kubernetes node does.
func clusterNetwork(t *testing.T, nodes []*node) {
	t.Helper()
	for _, n := range nodes {
		run(t, "ip", "netns", "exec", n.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		for _, o := range nodes {
			if o != n {
				run(t, "ip", "-n", n.netns, "route", "add", o.podCIDR, "via", o.underlay)
			}
		}
	}
}

// labelGateway makes n a gateway node (SEMAPHORE_WG_GATEWAY_NODES' default selector).
func labelGateway(t *testing.T, c *testenv.Cluster, n *node) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"wireguard.semaphore.uw.io/gateway":"true"}}}`)
	if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), n.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitGateway waits until one of candidates says, on its Node, that it is gcp's gateway toward
// aws with the highest term, and returns it and the other candidate (nil when there is one).
func waitGateway(t *testing.T, nodes []*node, gcp *testenv.Cluster, candidates ...*node) (active, other *node) {
	t.Helper()
	eventually(t, nodes, wait, "a gateway among "+fmt.Sprint(candidates), func() error {
		list, err := gcp.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var ps []peers.Node
		for _, n := range list.Items {
			ps = append(ps, peers.Node{Name: n.Name, Annotations: n.Annotations})
		}
		g, found, _ := peers.ActiveGateway("aws", ps)
		if !found {
			return fmt.Errorf("no gcp node says it is the gateway toward aws")
		}
		i := slices.IndexFunc(candidates, func(c *node) bool { return c.name == g.Name })
		if i < 0 {
			return fmt.Errorf("%s says it is the gateway, want one of %v", g.Name, candidates)
		}
		active = candidates[i]
		return nil
	})
	for _, c := range candidates {
		if c != active {
			other = c
		}
	}
	return active, other
}

// checkThroughGateway waits until gw alone peers with aws's nodes, which have it as their one
// peer for every gcp pod, and the others (standby, a gateway node, nil when there is none;
// member, not one) hold no peer and route aws's pods to gw.
func checkThroughGateway(t *testing.T, nodes []*node, gw, standby, member *node, aws []*node) {
	t.Helper()
	var gcpCIDRs, awsCIDRs []string
	for _, n := range nodes {
		if n.cluster == "gcp" {
			gcpCIDRs = append(gcpCIDRs, n.podCIDR)
		} else {
			awsCIDRs = append(awsCIDRs, n.podCIDR)
		}
	}
	eventually(t, nodes, wait, fmt.Sprintf("gcp reaches aws through %s", gw), func() error {
		if err := gw.checkPeers(aws); err != nil {
			return err
		}
		if err := gw.checkRoutes(aws); err != nil {
			return err
		}
		for _, a := range aws {
			if err := a.checkPeers([]*node{gw}); err != nil {
				return err
			}
			if err := a.checkRouteDsts(gcpCIDRs); err != nil {
				return err
			}
		}
		others := []*node{member}
		if standby != nil {
			if err := standby.checkPeers(nil); err != nil {
				return err
			}
			others = append(others, standby)
		}
		for _, n := range others {
			if err := n.checkRoutesVia(gw, awsCIDRs); err != nil {
				return err
			}
		}
		if out, err := exec.Command("ip", "-n", member.netns, "link", "show", member.device()).CombinedOutput(); err == nil {
			return fmt.Errorf("%s, no gateway node, holds %s: %s", member, member.device(), out)
		}
		// What a load balancer in front of the gateways checks: the active one alone answers 200.
		health := map[*node]int{gw: http.StatusOK, member: http.StatusServiceUnavailable}
		if standby != nil {
			health[standby] = http.StatusServiceUnavailable
		}
		for n, want := range health {
			got, err := n.gatewayHealth()
			if err != nil {
				return n.alive(fmt.Errorf("%s: GET /gateway/aws: %w", n, err))
			}
			if got != want {
				return fmt.Errorf("%s: GET /gateway/aws answered %d, want %d", n, got, want)
			}
		}
		return nil
	})
}

// gatewayHealth is the status of n's answer to GET /gateway/aws on its admin port.
func (n *node) gatewayHealth() (int, error) {
	resp, err := testbed.HTTPClientInNetns(n.netns).Get("http://127.0.0.1:8080/gateway/" + n.remote)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// checkRoutesVia checks that n's routes of protocol 0x53 through a next hop are exactly dsts
// through gw's underlay address.
func (n *node) checkRoutesVia(gw *node, dsts []string) error {
	out, err := exec.Command("ip", "-n", n.netns, "-4", "route", "show", "proto", routeProto).CombinedOutput()
	if err != nil {
		return n.alive(fmt.Errorf("%s: ip route: %w: %s", n, err, out))
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "via" {
			got = append(got, f[0]+" via "+f[2])
		}
	}
	var want []string
	for _, d := range dsts {
		want = append(want, d+" via "+gw.underlay)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return n.alive(fmt.Errorf("%s: routes through a gateway %q, want %q", n, got, want))
	}
	return nil
}

// pingAll waits until every pod of from reaches every pod of to, and back.
func pingAll(t *testing.T, nodes, from, to []*node) {
	t.Helper()
	for _, f := range from {
		for _, o := range to {
			for _, pair := range [][2]*node{{f, o}, {o, f}} {
				src, dst := pair[0], pair[1]
				eventually(t, nodes, wait, fmt.Sprintf("ping %s (%s) -> %s (%s)", src.pod, src, dst.pod, dst), func() error {
					return src.alive(ping(src.netns, src.pod, dst.pod, 2*time.Second))
				})
			}
		}
	}
}

// gcp goes from the mesh to gateways and back, its agents restarted one after the other as a
// rollout of the chart's new values does: after each switch every gcp pod and every aws pod
// reach each other again, aws's nodes peer with the gateway alone (or every gcp node again),
// and no route to a gateway is left once back in the mesh.
func TestDataPathSwitchesBetweenMeshAndGateways(t *testing.T) {
	requireLab(t)
	nodes := []*node{
		{name: "gcp-node-1", cluster: "gcp", remote: "aws", underlay: "192.0.2.11", podCIDR: "198.18.1.0/24", pod: "198.18.1.1", extraEnv: []string{"POD_NAMESPACE=default"}},
		{name: "gcp-node-2", cluster: "gcp", remote: "aws", underlay: "192.0.2.12", podCIDR: "198.18.2.0/24", pod: "198.18.2.1", extraEnv: []string{"POD_NAMESPACE=default"}},
		{name: "aws-node-1", cluster: "aws", remote: "gcp", underlay: "192.0.2.21", podCIDR: "198.18.11.0/24", pod: "198.18.11.1"},
	}
	gcp1, gcp2, aws1 := nodes[0], nodes[1], nodes[2]
	gcpNodes := nodes[:2]
	byName := newLab(t, testenv.Options{}, nodes)
	clusterNetwork(t, gcpNodes)
	labelGateway(t, byName["gcp"], gcp1)
	startControllers(t, nodes)
	pingAll(t, nodes, gcpNodes, []*node{aws1})
	eventually(t, nodes, wait, "aws-node-1 peers with every gcp node", func() error { return aws1.checkPeers(gcpNodes) })

	switched := rollOut(t, gcpNodes, "SEMAPHORE_WG_TOPOLOGY=gateway")
	pingAll(t, nodes, gcpNodes, []*node{aws1})
	t.Logf("to gateways: every pod reaches every pod %s after the last agent restarted", time.Since(switched).Round(10*time.Millisecond))
	checkThroughGateway(t, nodes, gcp1, nil, gcp2, []*node{aws1})

	switched = rollOut(t, gcpNodes, "SEMAPHORE_WG_TOPOLOGY=mesh")
	pingAll(t, nodes, gcpNodes, []*node{aws1})
	t.Logf("back to the mesh: every pod reaches every pod %s after the last agent restarted", time.Since(switched).Round(10*time.Millisecond))
	eventually(t, nodes, wait, "the mesh again, no route to a gateway", func() error {
		if err := aws1.checkPeers(gcpNodes); err != nil {
			return err
		}
		for _, g := range gcpNodes {
			if err := g.checkPeers([]*node{aws1}); err != nil {
				return err
			}
			if err := g.checkRoutesVia(gcp1, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// rollOut restarts the agents of nodes one after the other with setting added to (or replacing
// the same variable in) their environment, and returns when the last one started.
func rollOut(t *testing.T, nodes []*node, setting string) time.Time {
	t.Helper()
	name, _, _ := strings.Cut(setting, "=")
	for _, n := range nodes {
		n.env = append(slices.DeleteFunc(n.env, func(e string) bool { return strings.HasPrefix(e, name+"=") }), setting)
		n.stop(t)
		n.start(t)
	}
	return time.Now()
}
