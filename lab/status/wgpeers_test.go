package status

import (
	"reflect"
	"slices"
	"testing"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// The routes read are semaphore-wireguard's.
func TestRouteProtocolIsTheDevicesRouteProtocol(t *testing.T) {
	if routeProtocol != int(device.RouteProtocol) {
		t.Fatalf("routeProtocol is %d, semaphore-wireguard marks its routes with %d", routeProtocol, device.RouteProtocol)
	}
}

// Each route's destination is a prefix, a single address given its full length, whatever
// follows it or comes before it, sorted by address.
func TestRouteDestinationsAreSortedPrefixes(t *testing.T) {
	out := "198.18.1.250 scope link \n198.18.1.8/29 scope link \nunicast 198.18.1.0/29 scope link \n\n"
	if got, want := routeDestinations(out), []string{"198.18.1.0/29", "198.18.1.8/29", "198.18.1.250/32"}; !slices.Equal(got, want) {
		t.Errorf("routeDestinations = %v, want %v", got, want)
	}
	if got := routeDestinations(""); got != nil {
		t.Errorf("routeDestinations of no routes = %v, want none", got)
	}
}

// A peer is named by the node that publishes its key; a key nobody publishes stays a key.
func TestPeersByNameNamesKnownKeysOnly(t *testing.T) {
	allowed := map[string][]string{"a=": {"198.18.1.0/29"}, "b=": {"198.18.1.250/32"}}
	got := peersByName(allowed, map[string]string{"a=": "aws-node-1"})
	want := map[string][]string{"aws-node-1": {"198.18.1.0/29"}, "key b=": {"198.18.1.250/32"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("peersByName = %v, want %v", got, want)
	}
}

// The changes are those of the remote's device, by operation; the peer operations leave the
// routes out.
func TestDeviceChangesOfOneRemote(t *testing.T) {
	sample := func(remote, op string, v float64) testbed.Sample {
		return testbed.Sample{Name: changesMetric, Labels: map[string]string{"remote": remote, "operation": op}, Value: v}
	}
	ss := []testbed.Sample{
		sample("aws", "peer_add", 2), sample("aws", "peer_update", 5), sample("aws", "route_add", 7),
		sample("merit", "peer_update", 9),
		{Name: "semaphore_wg_peers", Labels: map[string]string{"remote": "aws"}, Value: 2},
	}
	got := deviceChanges(ss, "aws")
	if want := map[string]float64{"peer_add": 2, "peer_update": 5, "route_add": 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("deviceChanges = %v, want %v", got, want)
	}
	if n := PeerOps(got); n != 7 {
		t.Errorf("PeerOps = %v, want 7", n)
	}
}
