package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// expectLocalAnnotations waits until gcp-node-1 carries want (a value of "" is an annotation that
// must be absent).
func expectLocalAnnotations(t *testing.T, what string, want map[string]string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, func() error {
		n, err := local.Client.CoreV1().Nodes().Get(context.Background(), "gcp-node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, w := range want {
			if got, has := n.Annotations[k]; got != w || (w == "" && has) {
				return fmt.Errorf("annotation %s is %q (set: %v), want %q; all: %v", k, got, has, w, n.Annotations)
			}
		}
		return nil
	})
}

// removeAnnotation removes annotation key of node name in c.
func removeAnnotation(t *testing.T, c *testenv.Cluster, name, key string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: nil}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func decodeTypes(t *testing.T, value string) endpoint.Types {
	t.Helper()
	var types endpoint.Types
	if err := types.Decode(value); err != nil {
		t.Fatal(err)
	}
	return types
}

// By default a node publishes its ExternalIP (a cloud's 1:1 NAT) over its InternalIP. An
// operator's override annotation wins while it is an address; a bad one is logged and counted,
// the address types apply again, and the annotation, not ours, stays as the operator left it.
func TestEndpointIsTheFirstAddressOfTheTypesUnlessOverridden(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "10.0.0.21", nil, "198.18.21.0/24")
	peerstest.SetAddresses(t, local.Client, "gcp-node-1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.21"},
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.21"})
	devKey := devicetest.Key(t)
	r := startWith(t, devicetest.New(), devKey, controller.Options{})
	ep := peers.EndpointAnnotation("aws")
	expectLocalAnnotations(t, "the ExternalIP published", map[string]string{ep: "203.0.113.21:51821", peers.PubKeyAnnotation("aws"): devKey.PublicKey().String()})

	annotate(t, local, "gcp-node-1", endpoint.OverrideAnnotation, "198.51.100.9")
	expectLocalAnnotations(t, "the override published", map[string]string{ep: "198.51.100.9:51821"})

	annotate(t, local, "gcp-node-1", endpoint.OverrideAnnotation, "gcp-node-1.example.com")
	expectLocalAnnotations(t, "a bad override ignored", map[string]string{ep: "203.0.113.21:51821", endpoint.OverrideAnnotation: "gcp-node-1.example.com"})
	if v, n := testenv.MetricSeries(t, r.Registry, "semaphore_wg_endpoint_override_invalid", nil); v != 1 || n != 1 {
		t.Errorf("endpoint_override_invalid = %v (%d series), want 1", v, n)
	}
	removeAnnotation(t, local, "gcp-node-1", endpoint.OverrideAnnotation)
	testenv.Eventually(t, 10*time.Second, "the bad override no longer counted", func() error {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_endpoint_override_invalid", nil); v != 0 {
			return fmt.Errorf("endpoint_override_invalid = %v", v)
		}
		return nil
	})

	// A restart leaves the operator's override alone while it cleans up our stale annotations.
	r.Stop()
	annotate(t, local, "gcp-node-1", endpoint.OverrideAnnotation, "198.51.100.9")
	annotate(t, local, "gcp-node-1", peers.PathMTUAnnotation("merit"), "1500")
	startWith(t, devicetest.New(), devKey, controller.Options{})
	expectLocalAnnotations(t, "override kept, stale path MTU removed", map[string]string{
		ep: "198.51.100.9:51821", endpoint.OverrideAnnotation: "198.51.100.9", peers.PathMTUAnnotation("merit"): "",
	})
}

// A node with no address of the remote's types (on premises behind a source NAT, types
// ExternalIP) publishes its key and no endpoint, removing a stale one; once it has such an
// address (a cloud assigned it late) it publishes it.
func TestNodeWithoutAnAddressOfTheTypesPublishesNoEndpoint(t *testing.T) {
	needClusters(t)
	ep := peers.EndpointAnnotation("aws")
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "10.0.0.21", map[string]string{ep: "10.0.0.21:51821"}, "198.18.21.0/24")
	devKey := devicetest.Key(t)
	startWith(t, devicetest.New(), devKey, controller.Options{EndpointAddressTypes: decodeTypes(t, "aws:ExternalIP")})
	expectLocalAnnotations(t, "no endpoint", map[string]string{ep: "", peers.PubKeyAnnotation("aws"): devKey.PublicKey().String(), peers.PathMTUAnnotation("aws"): "1500"})

	peerstest.SetAddresses(t, local.Client, "gcp-node-1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.21"},
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.21"})
	expectLocalAnnotations(t, "the new ExternalIP published", map[string]string{ep: "203.0.113.21:51821"})
}

// A remote node that publishes its key and no endpoint is a peer without one: WireGuard learns
// where it is from its handshakes, and that endpoint is never replaced. peer_info tells it from
// the others.
func TestRemoteNodeWithoutEndpointIsAPeerThatMustReachUs(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	hidden, open := devicetest.Key(t), devicetest.Key(t)
	peerstest.CreateNode(t, aws.Client, "aws-hidden", "10.1.0.5", map[string]string{peers.PubKeyAnnotation("gcp"): hidden.PublicKey().String()}, "198.18.51.0/24")
	remoteNode(t, "aws-open", open.PublicKey(), "192.0.2.52:51822", "198.18.52.0/24")
	devs := devicetest.New()
	r := start(t, devs, devicetest.Key(t))
	expectPeers(t, r, devs, "a peer without endpoint", map[string]string{hidden.PublicKey().String(): "<nil>", open.PublicKey().String(): "192.0.2.52:51822"},
		[]string{"198.18.51.0/24", "198.18.52.0/24"}, map[string]float64{peers.ReasonBadEndpoint: 0})
	for node, published := range map[string]string{"aws-hidden": "false", "aws-open": "true"} {
		if v, _ := testenv.MetricSeries(t, r.Registry, "semaphore_wg_peer_info", map[string]string{"remote": "aws", "peer": node, "endpoint_published": published}); v != 1 {
			t.Errorf("peer_info{peer=%s, endpoint_published=%s} = %v, want 1", node, published, v)
		}
	}

	devs.Roam("wg-aws", hidden.PublicKey(), "203.0.113.50:40000")
	devs.Handshake("wg-aws", hidden.PublicKey(), time.Now().Add(-time.Hour))
	ops := devs.Counts().PeerChanges
	remoteNode(t, "aws-other", devicetest.Key(t).PublicKey(), "192.0.2.53:51822", "198.18.53.0/24")
	testenv.Eventually(t, 20*time.Second, "the new node's peer", func() error {
		if got := devs.Endpoints("wg-aws"); len(got) != 3 {
			return fmt.Errorf("peers %v", got)
		}
		return nil
	})
	if got := devs.Endpoints("wg-aws")[hidden.PublicKey().String()]; got != "203.0.113.50:40000" {
		t.Errorf("the learned endpoint of a node that publishes none became %s", got)
	}
	if now := devs.Counts().PeerChanges; now-ops != 1 {
		t.Errorf("a new node took %d peer operations, want 1", now-ops)
	}
}

// A roamed endpoint kept while its session lives is given up when the session ends, without any
// change of the remote's nodes: the controller syncs again then.
func TestRoamedEndpointIsGivenUpWhenItsSessionEnds(t *testing.T) {
	needClusters(t)
	peerstest.CreateNode(t, local.Client, "gcp-node-1", "192.0.2.21", nil, "198.18.21.0/24")
	k := devicetest.Key(t)
	remoteNode(t, "aws-roaming", k.PublicKey(), "192.0.2.61:51822", "198.18.61.0/24")
	devs := devicetest.New()
	r := start(t, devs, devicetest.Key(t))
	expectPeers(t, r, devs, "the peer", map[string]string{k.PublicKey().String(): "192.0.2.61:51822"}, []string{"198.18.61.0/24"}, nil)

	devs.Roam("wg-aws", k.PublicKey(), "203.0.113.61:40001")
	devs.Handshake("wg-aws", k.PublicKey(), time.Now().Add(-peers.SessionLifetime+3*time.Second))
	remoteNode(t, "aws-trigger", devicetest.Key(t).PublicKey(), "192.0.2.62:51822", "198.18.62.0/24")
	testenv.Eventually(t, 10*time.Second, "synced with the roamed endpoint kept", func() error {
		if got := devs.Endpoints("wg-aws"); len(got) != 2 || got[k.PublicKey().String()] != "203.0.113.61:40001" {
			return fmt.Errorf("peers %v", got)
		}
		return nil
	})
	testenv.Eventually(t, 20*time.Second, "the published endpoint set when the session ended", func() error {
		if got := devs.Endpoints("wg-aws")[k.PublicKey().String()]; got != "192.0.2.61:51822" {
			return fmt.Errorf("endpoint %s", got)
		}
		return nil
	})
}
