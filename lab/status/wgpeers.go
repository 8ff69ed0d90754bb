package status

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// What a scenario watches of a node's device for a remote while the remote's pod addresses
// change: each peer's allowed IPs, by the remote node it stands for, the routes
// semaphore-wireguard keeps through the device, and the changes it counted. The status reads
// the devices once (wireguard.go); a scenario reads them again and again, until a change has
// reached every node.

// routeProtocol marks the routes semaphore-wireguard keeps (device.RouteProtocol, which a test
// holds this to: importing the device package would build WireGuard into the lab).
const routeProtocol = 83

// changesMetric counts the changes semaphore-wireguard made to a device, by remote and
// operation.
const changesMetric = "semaphore_wg_device_changes_total"

// peerOperations are the operations of changesMetric on a peer, as opposed to a route.
var peerOperations = []string{"peer_add", "peer_update", "peer_remove"}

// DevicePeers is one node's device for a remote, as a scenario reads it.
type DevicePeers struct {
	// AllowedIPs are the allowed IPs of each peer, by the remote node whose key it has (an
	// unknown key as "key <key>"), each sorted.
	AllowedIPs map[string][]string
	// Routes are the destinations of semaphore-wireguard's routes through the device (`ip route
	// show proto 83 dev <device>`), as prefixes, sorted.
	Routes []string
	// Changes are the changes semaphore-wireguard made to the device, by operation
	// (semaphore_wg_device_changes_total).
	Changes map[string]float64
}

// PeerOps are the peer operations among changes (by operation): added, updated and removed
// peers.
func PeerOps(changes map[string]float64) float64 {
	var n float64
	for _, op := range peerOperations {
		n += changes[op]
	}
	return n
}

// IPAMBlocks are the IPAM blocks of the Calico-way cluster (layout.CalicoCluster), as
// calico-ipam wrote them.
func IPAMBlocks(ctx context.Context, rec *layout.Record) ([]*calicoipam.Block, error) {
	return listBlocks(ctx, rec)
}

// PeerNames are the nodes of remote by the public key each publishes for consumer: what names
// the peers of consumer's devices for remote.
func PeerNames(ctx context.Context, rec *layout.Record, remote, consumer string) (map[string]string, error) {
	i := slices.IndexFunc(rec.Clusters, func(c layout.ClusterRecord) bool { return c.Name == remote })
	if i < 0 {
		return nil, fmt.Errorf("the lab has not recorded cluster %s", remote)
	}
	annotations, err := nodeAnnotations(ctx, rec.Clusters[i].DirectKubeconfig)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for node, a := range annotations {
		if key := a[peers.PubKeyAnnotation(consumer)]; key != "" {
			out[key] = node
		}
	}
	return out, nil
}

// ReadDevicePeers reads node n's device for remote: its peers' allowed IPs from the device, named
// by names (PeerNames of remote for n's cluster), its routes from n's network namespace, and the
// changes from the metrics of n's semaphore-wireguard.
func ReadDevicePeers(ctx context.Context, rec *layout.Record, n layout.Node, remote string, names map[string]string) (DevicePeers, error) {
	i := slices.IndexFunc(rec.Controllers, func(c layout.Controller) bool { return c.Component == layout.WireGuardComponent && c.Node == n.Name })
	if i < 0 {
		return DevicePeers{}, fmt.Errorf("%s: semaphore-wireguard does not run", n.Name)
	}
	c, name := rec.Controllers[i], peers.DeviceName(remote)
	ss, err := Scrape(ctx, c.Admin, changesMetric, 2*time.Second)
	if err != nil {
		return DevicePeers{}, fmt.Errorf("%s: semaphore-wireguard's metrics: %w", n.Name, err)
	}
	root, err := ContainerRoot(c.PodUID)
	if err != nil {
		return DevicePeers{}, fmt.Errorf("%s: %w", n.Name, err)
	}
	allowed, err := DeviceAllowedIPs(root, name)
	if err != nil {
		return DevicePeers{}, fmt.Errorf("%s: reading %s: %w", n.Name, name, err)
	}
	out, err := exec.CommandContext(ctx, "ip", "-n", n.Netns, "-o", "route", "show", "proto", strconv.Itoa(routeProtocol), "dev", name).Output()
	if err != nil {
		return DevicePeers{}, fmt.Errorf("%s: the routes through %s: %w", n.Name, name, err)
	}
	return DevicePeers{AllowedIPs: peersByName(allowed, names), Routes: routeDestinations(string(out)), Changes: deviceChanges(ss, remote)}, nil
}

// peersByName are the allowed IPs of each peer (by key) by the name names give its key.
func peersByName(allowed map[string][]string, names map[string]string) map[string][]string {
	out := make(map[string][]string, len(allowed))
	for key, ips := range allowed {
		name, ok := names[key]
		if !ok {
			name = "key " + key
		}
		out[name] = ips
	}
	return out
}

// routeDestinations are the destinations of the routes `ip -o route show` printed, as prefixes
// (it prints a single address without its length), sorted.
func routeDestinations(out string) []string {
	var dsts []netip.Prefix
	for line := range strings.Lines(out) {
		// The destination is the first field that is one; a route type may come before it.
		for _, f := range strings.Fields(line) {
			if p, err := netip.ParsePrefix(f); err == nil {
				dsts = append(dsts, p)
				break
			}
			if a, err := netip.ParseAddr(f); err == nil {
				dsts = append(dsts, netip.PrefixFrom(a, a.BitLen()))
				break
			}
		}
	}
	slices.SortFunc(dsts, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var s []string
	for _, p := range dsts {
		s = append(s, p.String())
	}
	return s
}

// deviceChanges are the changes to the device for remote among ss, by operation.
func deviceChanges(ss []testbed.Sample, remote string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		if s.Name == changesMetric && s.Labels["remote"] == remote {
			out[s.Labels["operation"]] += s.Value
		}
	}
	return out
}
