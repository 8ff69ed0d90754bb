package check

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// checkWireGuardMode says which WireGuard implementation each agent's device for remote uses
// (semaphore_wg_device_info): the kernel's passes; the userspace one (wireguard-go) works but
// is slower, and every restart of the agent holds the tunnels' traffic back, so it is a warning.
func checkWireGuardMode(v controllers, remote string, res Result) Result {
	byMode := map[string][]string{}
	var older []string
	devices := map[string]bool{}
	for _, a := range v.readable() {
		if !a.metrics.Has(deviceInfoMetric) {
			older = append(older, v.where(a))
			continue
		}
		for _, s := range a.metrics.Where(deviceInfoMetric, "remote", remote) {
			byMode[s.Labels["implementation"]] = append(byMode[s.Labels["implementation"]], a.pod.Spec.NodeName)
			devices[s.Labels["device"]] = true
		}
	}
	kernel, userspace := byMode["kernel"], byMode["userspace"]
	switch {
	case len(userspace) > 0:
		return warnRunbook(res, "check-wireguard-mode", "userspace WireGuard (wireguard-go) for remote %s on nodes %s (kernel on %d): slower than the kernel's, and every restart of the agent holds the tunnels' traffic back until the new one runs; give those nodes a kernel with WireGuard (Linux 5.6+, or the wireguard module) and restart their agents",
			remote, most(userspace, 5), len(kernel))
	case len(older) > 0:
		return warnRunbook(res, "check-wireguard-mode", "kernel WireGuard for remote %s on %d nodes; %s export no %s (a version before it): their implementation is not known here",
			remote, len(kernel), most(older, 5), deviceInfoMetric)
	case len(kernel) == 0:
		return warnRunbook(res, "check-wireguard-mode", "no agent has a device for remote %s (%s): see peers and the agents' logs", remote, deviceInfoMetric)
	}
	return pass(res, "kernel WireGuard for remote %s on each of %d nodes (device %s)", remote, len(kernel), most(slices.Collect(maps.Keys(devices)), 5))
}

// checkMTU checks, on every agent, that the MTU of the device for remote leaves room for
// WireGuard's overhead within the path MTU toward remote: device MTU <= path MTU - 60 over IPv4,
// - 80 over IPv6. The family is that of the endpoint the node publishes for remote; where it is
// not known, an MTU that fits IPv4 only is a warning.
func (k *checker) checkMTU(ctx context.Context, v controllers, remote string, res Result) Result {
	families := k.endpointFamilies(ctx, remote)
	var over, maybe, unknownPath, older []string
	fits := 0
	for _, a := range v.readable() {
		node := a.pod.Spec.NodeName
		device, okDevice := a.metrics.Value(deviceMTUMetric, "remote", remote)
		path, okPath := a.metrics.Value(pathMTUMetric, "remote", remote)
		switch {
		case !a.metrics.Has(deviceMTUMetric) || !a.metrics.Has(pathMTUMetric):
			older = append(older, v.where(a))
			continue
		case !okDevice || !okPath || path <= 0:
			unknownPath = append(unknownPath, node)
			continue
		}
		d, p := int(device), int(path)
		family, known := families[node]
		switch {
		case d > p-mtu.OverheadIPv4:
			over = append(over, fmt.Sprintf("node %s: %d > %d - %d (IPv4)", node, d, p, mtu.OverheadIPv4))
		case d > p-mtu.OverheadIPv6 && known && family == "IPv6":
			over = append(over, fmt.Sprintf("node %s: %d > %d - %d (IPv6)", node, d, p, mtu.OverheadIPv6))
		case d > p-mtu.OverheadIPv6 && !known:
			maybe = append(maybe, fmt.Sprintf("node %s: %d > %d - %d", node, d, p, mtu.OverheadIPv6))
		default:
			fits++
		}
	}
	switch {
	case len(over) > 0:
		return fail(res, "check-mtu", "the WireGuard device MTU for remote %s exceeds the path MTU less WireGuard's overhead (%d over IPv4, %d over IPv6) on %s: full-size packets are fragmented or dropped; lower wireguard.mtu (SEMAPHORE_WG_MTU) or let it follow the path (auto)",
			remote, mtu.OverheadIPv4, mtu.OverheadIPv6, most(over, 5))
	case len(maybe) > 0:
		return warnRunbook(res, "check-mtu", "the device MTU for remote %s fits the path over IPv4 but not over IPv6 on %s, and these nodes publish no endpoint that says which they use", remote, most(maybe, 5))
	case len(older) > 0:
		return warnRunbook(res, "check-mtu", "%s export no %s or %s (a version before them): their MTU is not checked", most(older, 5), deviceMTUMetric, pathMTUMetric)
	case len(unknownPath) > 0:
		return warnRunbook(res, "check-mtu", "the path MTU toward remote %s is not known yet on nodes %s", remote, most(unknownPath, 5))
	}
	return pass(res, "the device MTU for remote %s fits the path MTU less WireGuard's overhead on each of %d nodes", remote, fits)
}

// endpointFamilies is, by local node, the address family (IPv4, IPv6) of the endpoint it
// publishes for remote; nodes that publish none, or cannot be read, are left out.
func (k *checker) endpointFamilies(ctx context.Context, remote string) map[string]string {
	out := map[string]string{}
	nodes, err := k.localNodes(ctx)
	if err != nil {
		return out
	}
	for _, n := range nodes {
		if ep, err := netip.ParseAddrPort(n.Annotations[peers.EndpointAnnotation(remote)]); err == nil {
			out[n.Name] = "IPv4"
			if ep.Addr().Unmap().Is6() {
				out[n.Name] = "IPv6"
			}
		}
	}
	return out
}

// localNodes are the local cluster's Nodes, listed once per run.
func (k *checker) localNodes(ctx context.Context) ([]corev1.Node, error) {
	if k.nodes == nil && k.nodesErr == nil {
		list, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			k.nodesErr = err
		} else {
			k.nodes = list.Items
			if k.nodes == nil {
				k.nodes = []corev1.Node{}
			}
		}
	}
	return k.nodes, k.nodesErr
}
