package controller_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A remote that reaches us through its gateways is one peer, its active gateway, for the pods
// of all its nodes; when another gateway is elected (a higher term) the peer moves to it, the
// routes staying as they are, although the gateway before it still says it is one (cut off, it
// cannot take its annotation back); a term that is not a number is counted, not followed.
func TestARemoteThroughItsGatewayIsOnePeerForAllItsPods(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	gw1, gw2 := devicetest.Key(t), devicetest.Key(t)
	gateway := func(key string, term string) map[string]string {
		return map[string]string{peers.PubKeyAnnotation("gcp"): key, peers.GatewayAnnotation("gcp"): term}
	}
	peerstest.CreateNode(t, aws.Client, "aws-gw-1", "192.0.2.31", gateway(gw1.PublicKey().String(), "1"), "198.18.31.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-gw-2", "192.0.2.32", map[string]string{peers.PubKeyAnnotation("gcp"): gw2.PublicKey().String()}, "198.18.32.0/24")
	peerstest.CreateNode(t, aws.Client, "aws-node-33", "192.0.2.33", map[string]string{"example.com/role": "worker"}, "198.18.33.0/24", "fd00:198:33::/64")
	annotate(t, aws, "aws-gw-1", peers.EndpointAnnotation("gcp"), "192.0.2.31:51822")
	annotate(t, aws, "aws-gw-2", peers.EndpointAnnotation("gcp"), "192.0.2.32:51822")

	devs := devicetest.New()
	r := start(t, devs, devicetest.Key(t))
	all := []string{"198.18.31.0/24", "198.18.32.0/24", "198.18.33.0/24", "fd00:198:33::/64"}
	sort.Strings(all)
	expect := func(what string, gateway wgtypes.Key, endpoint string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, what, func() error {
			got, allowed, routes := devs.Endpoints("wg-aws"), devs.AllowedIPs("wg-aws"), devs.Routes("wg-aws")
			want, wantAllowed := map[string]string{gateway.PublicKey().String(): endpoint}, map[string][]string{gateway.PublicKey().String(): all}
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(allowed) != fmt.Sprint(wantAllowed) || fmt.Sprint(routes) != fmt.Sprint(all) {
				return fmt.Errorf("peers %v allowed IPs %v routes %v, want %v %v %v", got, allowed, routes, want, wantAllowed, all)
			}
			return nil
		})
	}
	expect("the active gateway, for every node's pods", gw1, "192.0.2.31:51822")

	routeChanges := func() float64 {
		var sum float64
		for _, op := range []string{"route_add", "route_remove"} {
			v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_device_changes_total", map[string]string{"remote": "aws", "operation": op})
			sum += v
		}
		return sum
	}
	ops, routes := devs.Counts().PeerChanges, routeChanges()
	annotate(t, aws, "aws-gw-2", peers.GatewayAnnotation("gcp"), "2")
	expect("the gateway elected after it", gw2, "192.0.2.32:51822")
	if now := devs.Counts().PeerChanges; now-ops != 2 {
		t.Errorf("a change of gateway took %d peer operations, want 2 (the new one added, the old removed)", now-ops)
	}
	if now := routeChanges(); now != routes {
		t.Errorf("a change of gateway changed %v routes, want none: they go through the device either way", now-routes)
	}

	annotate(t, aws, "aws-node-33", peers.GatewayAnnotation("gcp"), "three")
	testenv.Eventually(t, 10*time.Second, "the bad term counted", func() error {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_skipped_peers", map[string]string{"remote": "aws", "reason": peers.ReasonBadGatewayTerm}); v != 1 {
			return fmt.Errorf("skipped_peers{reason=%s} = %v", peers.ReasonBadGatewayTerm, v)
		}
		return nil
	})
	expect("still the gateway with the highest term", gw2, "192.0.2.32:51822")
}
