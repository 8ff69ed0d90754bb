//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// joins is how many nodes join the remote reached through its gateway, one after the other.
const joins = 10

// gatewayResult is what the remote reached through its gateway costs the same agent that read
// it node to node: the switch from one peer per node to one peer for all, a node joining (its
// pod CIDR added to the gateway's allowed IPs), and another gateway elected.
type gatewayResult struct {
	switched                    time.Duration
	switchPeerOps, switchRoutes float64
	joins                       []time.Duration
	joinPeerOps, joinRouteOps   float64
	joinWrites                  float64
	failover                    time.Duration
	failoverPeerOps             float64
}

// benchGateway has remote node 0 say it is its cluster's gateway toward us, while run reads the
// remote node to node: the device goes from one peer per node to that node alone, for every
// node's pod CIDR, its routes unchanged. Then nodes join the remote one at a time, and node 1 is
// elected after node 0. At the end the joined nodes are deleted and no node says it is a
// gateway any more.
func benchGateway(b *testing.B, run *running, client kubernetes.Interface, reader *device.Manager, dev string, keys []wgtypes.Key) gatewayResult {
	var r gatewayResult
	before := run.counts(b)
	t0 := time.Now()
	setGateway(b, client, remoteNode(0), "1")
	waitGatewayPeer(b, reader, dev, keys[0], remoteNodes, t0, "the switch to the gateway")
	r.switched = time.Since(t0)
	after := waitReconciled(b, run, before)
	r.switchPeerOps, r.switchRoutes = after.peerOps-before.peerOps, after.routeOps-before.routeOps
	// The gateway's fake node never shakes hands, so its peer is created afresh every second
	// for its first seconds (peers.Retries): the joins are measured once that is over.
	time.Sleep(peers.RetryWindow)

	for k := range joins {
		i := remoteNodes + k
		before, c0 := run.counts(b), run.devices.Counters()
		t1 := time.Now()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: remoteNode(i)}, Spec: corev1.NodeSpec{PodCIDR: podCIDR(i), PodCIDRs: []string{podCIDR(i)}}}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitGatewayPeer(b, reader, dev, keys[0], i+1, t1, fmt.Sprintf("node %d joining", i))
		r.joins = append(r.joins, time.Since(t1))
		after := waitReconciled(b, run, before)
		r.joinPeerOps += after.peerOps - before.peerOps
		r.joinRouteOps += after.routeOps - before.routeOps
		r.joinWrites += float64(run.devices.Counters().DeviceConfigs - c0.DeviceConfigs)
	}

	before = run.counts(b)
	t2 := time.Now()
	setGateway(b, client, remoteNode(1), "2")
	waitGatewayPeer(b, reader, dev, keys[1], remoteNodes+joins, t2, "another gateway")
	r.failover = time.Since(t2)
	after = waitReconciled(b, run, before)
	r.failoverPeerOps = after.peerOps - before.peerOps

	for k := range joins {
		if err := client.CoreV1().Nodes().Delete(context.Background(), remoteNode(remoteNodes+k), metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	setGateway(b, client, remoteNode(0), "")
	setGateway(b, client, remoteNode(1), "")
	return r
}

// setGateway makes remote node name say it is the gateway toward us with term ("": it does not).
func setGateway(b *testing.B, client kubernetes.Interface, name, term string) {
	value := "null"
	if term != "" {
		value = fmt.Sprintf("%q", term)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, peers.GatewayAnnotation(localName), value)
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
}

// waitGatewayPeer polls the device from t0 until its one peer is key with prefixes allowed IPs
// and as many routes, failing after convergeMax.
func waitGatewayPeer(b *testing.B, reader *device.Manager, dev string, key wgtypes.Key, prefixes int, t0 time.Time, what string) {
	for {
		ps, err := reader.Peers(dev)
		if err == nil && len(ps) == 1 && ps[0].PublicKey == key && len(ps[0].AllowedIPs) == prefixes {
			if rs, err := reader.OurRoutes(dev); err == nil && len(rs) == prefixes {
				return
			}
		}
		if time.Since(t0) > convergeMax {
			b.Fatalf("%s: the device does not hold the gateway alone for %d prefixes after %v (%d peers)", what, prefixes, convergeMax, len(ps))
		}
		time.Sleep(time.Millisecond)
	}
}

// waitReconciled waits until a reconcile finished since before, and returns the counts then.
func waitReconciled(b *testing.B, run *running, before counts) counts {
	testenv.Eventually(b, changeMax, "reconcile", func() error {
		if now := run.counts(b); now.reconciles <= before.reconciles {
			return fmt.Errorf("no reconcile finished yet")
		}
		return nil
	})
	return run.counts(b)
}

func (r gatewayResult) report(b *testing.B) {
	p50, maxJoin := percentiles(r.joins)
	b.ReportMetric(r.switched.Seconds(), "gateway_switch_s")
	b.ReportMetric(r.joinPeerOps/joins, "gateway_peer-ops/join")
	b.ReportMetric(float64(p50.Microseconds())/1000, "gateway_join-p50-ms")
	b.ReportMetric(float64(maxJoin.Microseconds())/1000, "gateway_join-max-ms")
	b.ReportMetric(float64(r.failover.Microseconds())/1000, "gateway_failover-ms")
}

func (r gatewayResult) print() {
	p50, maxJoin := percentiles(r.joins)
	fmt.Printf("wireguard gateway: the remote's %d nodes reached through one of them: 1 peer for %d prefixes instead of %d peers, switched in %v (%.0f peer operations, %.0f route changes)\n",
		remoteNodes, remoteNodes, remoteNodes, r.switched.Round(time.Millisecond), r.switchPeerOps, r.switchRoutes)
	fmt.Printf("wireguard gateway: %d nodes joining one at a time: %.0f peer operations, %.0f device writes, %.0f route changes; join -> device p50 %v, max %v\n",
		joins, r.joinPeerOps, r.joinWrites, r.joinRouteOps, p50.Round(100*time.Microsecond), maxJoin.Round(100*time.Microsecond))
	fmt.Printf("wireguard gateway: another gateway elected: on the device in %v, %.0f peer operations\n",
		r.failover.Round(100*time.Microsecond), r.failoverPeerOps)
	if r.switchRoutes != 0 || r.joinPeerOps != joins || r.joinRouteOps != joins || r.failoverPeerOps != 2 {
		fmt.Println("wireguard gateway: aims missed (no route change on the switch, 1 peer operation and 1 route per join, 2 peer operations for a new gateway)")
	}
}
