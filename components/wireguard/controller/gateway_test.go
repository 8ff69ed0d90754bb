package controller_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
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
	retries := func() float64 {
		v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_device_changes_total", map[string]string{"remote": "aws", "operation": "peer_retry"})
		return v
	}
	devs.Handshake("wg-aws", gw1.PublicKey(), time.Now())
	ops, routes, retried := devs.Counts().PeerChanges, routeChanges(), retries()
	annotate(t, aws, "aws-gw-2", peers.GatewayAnnotation("gcp"), "2")
	expect("the gateway elected after it", gw2, "192.0.2.32:51822")
	// Each retry is a removal and an addition.
	if now := devs.Counts().PeerChanges - 2*int(retries()-retried); now-ops != 2 {
		t.Errorf("a change of gateway took %d peer operations, want 2 (the new one added, the old removed)", now-ops)
	}
	// Its first handshake unanswered, the new gateway is created afresh every second, until
	// it shakes hands.
	testenv.Eventually(t, 10*time.Second, "the new gateway created afresh", func() error {
		if retries() == retried {
			return fmt.Errorf("no peer_retry yet")
		}
		return nil
	})
	// A retry under way may create it afresh once more, without a handshake: shake hands again
	// until none can be.
	for range 15 {
		devs.Handshake("wg-aws", gw2.PublicKey(), time.Now())
		time.Sleep(100 * time.Millisecond)
	}
	after := retries()
	time.Sleep(2 * peers.RetryEvery)
	if now := retries(); now != after {
		t.Errorf("%v retries after the gateway shook hands, want none", now-after)
	}
	expect("the new gateway, created afresh", gw2, "192.0.2.32:51822")
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

// election is a gateway election decided by the test.
type election struct {
	mu     sync.Mutex
	active bool
	term   uint64
}

func (e *election) State() (bool, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active, e.term
}

func (e *election) set(active bool, term uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active, e.term = active, term
}

// expectRole waits until r's gateway_role for aws is 1 for role alone.
func expectRole(t *testing.T, r *running, role string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "role "+role, func() error {
		for _, other := range []string{controller.RoleActive, controller.RoleStandby, controller.RoleMember} {
			want := 0.0
			if other == role {
				want = 1
			}
			if v, n := testenv.MetricSeries(t, r.Registry, "semaphore_wg_gateway_role", map[string]string{"remote": "aws", "role": other}); n != 1 || v != want {
				return fmt.Errorf("gateway_role{role=%q} = %v (%d series), want %v", other, v, n, want)
			}
		}
		return nil
	})
}

// gatewayLabel selects gcp's gateway nodes in these tests.
var gatewayLabel = labels.SelectorFromSet(labels.Set{"wireguard.semaphore.uw.io/gateway": "true"})

// startGatewayTopology runs the controller of gcp-node-1 reaching aws through gateways; e is
// this node's election, nil when it is no gateway node.
func startGatewayTopology(t *testing.T, devs *devicetest.Devices, e controller.Election) *running {
	t.Helper()
	opts := controller.Options{GatewayNodes: gatewayLabel}
	if err := opts.Topology.Decode("aws:gateway"); err != nil {
		t.Fatal(err)
	}
	if e != nil {
		opts.Gateways = map[string]controller.Election{"aws": e}
	}
	return startWith(t, devs, devicetest.Key(t), opts)
}

// ourAnnotations are gcp-node-1's annotations for aws.
func ourAnnotations(t *testing.T) map[string]string {
	t.Helper()
	n, err := local.Client.CoreV1().Nodes().Get(context.Background(), "gcp-node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, "aws.") {
			out[k] = v
		}
	}
	return out
}

// A node of a cluster that reaches aws through gateways, when it is not the active gateway,
// holds no peer and publishes nothing for aws, and routes aws's pods to the active gateway's
// InternalIP, following it when another is elected; a node that is no gateway node holds no
// device for aws at all. When this node is elected it peers with aws's nodes, routes their pods
// through its device instead and publishes its key with the term of its election; when it loses
// the election it goes back to routing through the new gateway.
func TestANodeReachesARemoteThroughItsClustersActiveGateway(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", map[string]string{"example.com/role": "worker"}, "198.18.21.0/24")
	gw2 := peerstest.CreateNode(t, local.Client, "gcp-gw-2", "192.0.2.22", map[string]string{"example.com/role": "gateway"}, "198.18.22.0/24")
	gw2.Labels = map[string]string{"wireguard.semaphore.uw.io/gateway": "true"}
	if _, err := local.Client.CoreV1().Nodes().Update(context.Background(), gw2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	k1, k2 := devicetest.Key(t), devicetest.Key(t)
	remoteNode(t, "aws-node-1", k1.PublicKey(), "192.0.2.11:51822", "198.18.11.0/24")
	remoteNode(t, "aws-node-2", k2.PublicKey(), "192.0.2.12:51822", "198.18.12.0/24")

	expectGatewayRoutes := func(devs *devicetest.Devices, what string, want ...string) {
		t.Helper()
		testenv.Eventually(t, 20*time.Second, what, func() error {
			if got := devs.GatewayRoutes(); fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("routes through the gateway %v, want %v", got, want)
			}
			return nil
		})
	}

	t.Run("no gateway node", func(t *testing.T) {
		devs := devicetest.New()
		// Left from when the cluster reached aws node to node.
		if err := devs.Ensure("wg-aws", devicetest.Key(t), 51821, 1420); err != nil {
			t.Fatal(err)
		}
		if _, _, err := devs.SyncRoutes("wg-aws", []net.IPNet{
			{IP: net.IPv4(198, 18, 11, 0).To4(), Mask: net.CIDRMask(24, 32)}, {IP: net.IPv4(198, 18, 12, 0).To4(), Mask: net.CIDRMask(24, 32)},
		}); err != nil {
			t.Fatal(err)
		}
		r := startGatewayTopology(t, devs, nil)
		// While no gateway is known, aws's pods stay routed into the device, which has no peer
		// and drops them, rather than out of the default route in clear.
		testenv.Eventually(t, 20*time.Second, "routes kept while no gateway is known", func() error {
			if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_reconcile_total", map[string]string{"remote": "aws", "result": "success"}); v < 1 {
				return fmt.Errorf("not synced yet")
			}
			if got := devs.Routes("wg-aws"); fmt.Sprint(got) != "[198.18.11.0/24 198.18.12.0/24]" {
				return fmt.Errorf("routes through the device %v, want them kept", got)
			}
			if got := devs.GatewayRoutes(); len(got) != 0 {
				return fmt.Errorf("routes through a gateway %v", got)
			}
			return nil
		})
		annotate(t, local, "gcp-gw-2", peers.GatewayAnnotation("aws"), "3")
		expectGatewayRoutes(devs, "aws's pods through gcp-gw-2", "198.18.11.0/24 via 192.0.2.22", "198.18.12.0/24 via 192.0.2.22")
		if names, _ := devs.Devices("wg-"); len(names) != 0 {
			t.Errorf("devices %v on a node that is no gateway node", names)
		}
		if got := ourAnnotations(t); len(got) != 0 {
			t.Errorf("a node that is no gateway publishes %v for aws", got)
		}
		expectRole(t, r, controller.RoleMember)
		if _, n := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peers", map[string]string{"remote": "aws"}); n != 0 {
			t.Errorf("%d semaphore_wg_peers series for aws on a node that holds no device for it", n)
		}
		r.Stop()
	})

	t.Run("a gateway node", func(t *testing.T) {
		devs := devicetest.New()
		e := &election{}
		r := startGatewayTopology(t, devs, e)
		expectGatewayRoutes(devs, "a standby routes through the active gateway", "198.18.11.0/24 via 192.0.2.22", "198.18.12.0/24 via 192.0.2.22")
		if got := devs.Endpoints("wg-aws"); len(got) != 0 {
			t.Errorf("a standby has peers %v", got)
		}
		expectRole(t, r, controller.RoleStandby)

		e.set(true, 4)
		r.ElectionChanged("aws")
		testenv.Eventually(t, 20*time.Second, "the elected gateway peers with aws", func() error {
			if got := devs.Endpoints("wg-aws"); len(got) != 2 {
				return fmt.Errorf("peers %v", got)
			}
			if got := devs.Routes("wg-aws"); fmt.Sprint(got) != "[198.18.11.0/24 198.18.12.0/24]" {
				return fmt.Errorf("routes through the device %v", got)
			}
			if got := devs.GatewayRoutes(); len(got) != 0 {
				return fmt.Errorf("routes through another gateway %v", got)
			}
			a := ourAnnotations(t)
			if a[peers.GatewayAnnotation("aws")] != "4" || a[peers.PubKeyAnnotation("aws")] == "" {
				return fmt.Errorf("annotations for aws %v, want a key and the term 4", a)
			}
			return nil
		})
		expectRole(t, r, controller.RoleActive)

		// Another gateway elected after this one: this node stands down.
		annotate(t, local, "gcp-gw-2", peers.GatewayAnnotation("aws"), "5")
		e.set(false, 0)
		r.ElectionChanged("aws")
		expectGatewayRoutes(devs, "back to routing through the active gateway", "198.18.11.0/24 via 192.0.2.22", "198.18.12.0/24 via 192.0.2.22")
		testenv.Eventually(t, 20*time.Second, "no peer and nothing published", func() error {
			if got := devs.Endpoints("wg-aws"); len(got) != 0 {
				return fmt.Errorf("peers %v", got)
			}
			if got := devs.Routes("wg-aws"); len(got) != 0 {
				return fmt.Errorf("routes through the device %v", got)
			}
			if a := ourAnnotations(t); len(a) != 0 {
				return fmt.Errorf("annotations for aws %v", a)
			}
			return nil
		})
		expectRole(t, r, controller.RoleStandby)
		// gcp-gw-2, then this node, then gcp-gw-2 again.
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_gateway_changes_total", map[string]string{"remote": "aws"}); v != 2 {
			t.Errorf("gateway_changes_total = %v, want 2", v)
		}
		r.Stop()
	})
}

// A cluster that went back from gateways to the mesh: the routes to a gateway an agent left are
// removed at its start, so that the device's own routes can take their destinations.
func TestBackToTheMeshRemovesTheRoutesToAGateway(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	k1 := devicetest.Key(t)
	remoteNode(t, "aws-node-1", k1.PublicKey(), "192.0.2.11:51822", "198.18.11.0/24")
	devs := devicetest.New()
	left := map[netip.Prefix]netip.Addr{netip.MustParsePrefix("198.18.11.0/24"): netip.MustParseAddr("192.0.2.22")}
	if _, _, _, err := devs.SyncGatewayRoutes(left, true); err != nil {
		t.Fatal(err)
	}
	start(t, devs, devicetest.Key(t))
	testenv.Eventually(t, 20*time.Second, "the device's own route, none to a gateway", func() error {
		if got := devs.GatewayRoutes(); len(got) != 0 {
			return fmt.Errorf("routes to a gateway %v", got)
		}
		if got := devs.Routes("wg-aws"); fmt.Sprint(got) != "[198.18.11.0/24]" {
			return fmt.Errorf("routes through the device %v", got)
		}
		return nil
	})
}
