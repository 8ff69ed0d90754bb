package hostile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// leaks are the problems of the consumers, every cluster that reads the remote, and of the
// hostile consumer's WireGuard devices.
func (h *hostileRun) leaks(ctx context.Context, e expect) []string {
	var problems []string
	for _, c := range h.consumers() {
		problems = append(problems, h.mirrorLeaks(ctx, c, e)...)
		problems = append(problems, h.setLeaks(ctx, c, e)...)
	}
	return append(problems, h.wireguardLeaks(ctx, e)...)
}

// mirrorLeaks are the problems of cluster's mirrors of the remote: a refused address in any
// mirror's EndpointSlice, a mirror of a Service beyond the limit, the big Service's annotation
// in its mirror; with expectScenario the mirrors not those of the first HostileMirrorCap
// Services, or the hostile endpoints' mirror without exactly the honest one; with expectGone
// any mirror of the hostile namespace.
func (h *hostileRun) mirrorLeaks(ctx context.Context, cluster string, e expect) []string {
	client := h.l.Cluster(cluster).Client
	ours := labels.Set{ownership.ManagedBy: ownership.ServiceMirror}.String()
	svcs, err := client.CoreV1().Services(layout.SemaphoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: ours})
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the mirrors: %v", cluster, err)}
	}
	slicesList, err := client.DiscoveryV1().EndpointSlices(layout.SemaphoreNamespace).List(ctx, metav1.ListOptions{LabelSelector: ours})
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the mirrors' EndpointSlices: %v", cluster, err)}
	}
	problems := sliceLeaks(cluster, h.remote, slicesList.Items, h.refused)
	var got []string
	for _, s := range svcs.Items {
		src, ok := mirror.SourceOf(s.Labels)
		if !ok || src.Cluster != h.remote || src.Namespace != layout.HostileNamespace {
			continue
		}
		got = append(got, src.Name)
		if len(s.Annotations[layout.HostileLabel+"-filler"]) > 0 {
			problems = append(problems, fmt.Sprintf("%s: mirror %s carries the remote Service's %d-byte annotation", cluster, s.Name, hostileAnnotationBytes))
		}
	}
	slices.Sort(got)
	first := mirroredFirst(h.services, layout.HostileMirrorCap)
	if beyond := slices.DeleteFunc(slices.Clone(got), func(n string) bool { return slices.Contains(first, n) }); len(beyond) > 0 {
		problems = append(problems, fmt.Sprintf("%s: mirrors of %s's Services beyond the first %d: %s", cluster, h.remote, layout.HostileMirrorCap, most(beyond, 4)))
	}
	switch e {
	case expectScenario:
		if !slices.Equal(got, first) {
			problems = append(problems, fmt.Sprintf("%s: %d mirrors of %s's Services in %s, want the first %d by name", cluster, len(got), h.remote, layout.HostileNamespace, layout.HostileMirrorCap))
		}
		if got, want := mirrorEndpoints(slicesList.Items, h.remote, "endpoints"), []string{h.honestEndpoint}; !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: the mirror of %s/%s/endpoints holds %v, want %v (what is not refused)", cluster, h.remote, layout.HostileNamespace, got, want))
		}
	case expectGone:
		if len(got) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d mirrors of %s's deleted Services are left: %s", cluster, len(got), h.remote, most(got, 4)))
		}
	}
	return problems
}

// mirroredFirst are the first limit of the sorted names: those a consumer mirrors.
func mirroredFirst(names []string, limit int) []string {
	names = slices.Sorted(slices.Values(names))
	return names[:min(limit, len(names))]
}

// most lists at most n of s, saying how many more there are.
func most(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// sliceLeaks are the refused addresses in the service mirror's EndpointSlices of cluster that
// stand for remote's (a mirror's, or remote's share of a global service): the same address may
// be another cluster's to publish.
func sliceLeaks(cluster, remote string, items []discoveryv1.EndpointSlice, refused map[string]string) []string {
	var out []string
	for _, s := range items {
		if sliceSource(s.Labels) != remote {
			continue
		}
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				if reason, ok := refused[a]; ok {
					out = append(out, fmt.Sprintf("%s: EndpointSlice %s/%s holds %s, which %s may not publish (%s)", cluster, s.Namespace, s.Name, a, remote, reason))
				}
			}
		}
	}
	return out
}

// sliceSource is the cluster a slice of the service mirror's stands for.
func sliceSource(l map[string]string) string {
	if src, ok := mirror.SourceOf(l); ok {
		return src.Cluster
	}
	return l[global.LabelCluster]
}

// mirrorEndpoints are the addresses of the mirror slices of remote's hostile Service name.
func mirrorEndpoints(items []discoveryv1.EndpointSlice, remote, name string) []string {
	var out []string
	for _, s := range items {
		if src, ok := mirror.SourceOf(s.Labels); !ok || src != (mirror.Source{Cluster: remote, Namespace: layout.HostileNamespace, Name: name}) {
			continue
		}
		for _, e := range s.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	slices.Sort(out)
	return out
}

// setLeaks are the problems of cluster's network sets: a refused address in any; with
// expectScenario the hostile pods' set other than the honest pod's address, with expectGone
// that set there at all.
func (h *hostileRun) setLeaks(ctx context.Context, cluster string, e expect) []string {
	sets, err := status.ListNetworkSets(ctx, h.l.Cluster(cluster).DirectKubeconfig)
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the network sets: %v", cluster, err)}
	}
	problems := netSetLeaks(cluster, h.remote, sets, h.refused)
	name := netset.SetName(netset.Source{Cluster: h.remote, Namespace: layout.HostileNamespace, Name: layout.HostileNamespace})
	i := slices.IndexFunc(sets, func(s status.NetSet) bool { return s.Name == name })
	switch want := []string{h.honestPod + "/32"}; {
	case e == expectScenario && i < 0:
		problems = append(problems, fmt.Sprintf("%s: no network set %s of the honest hostile pod", cluster, name))
	case e == expectScenario && !slices.Equal(sets[i].Nets, want):
		problems = append(problems, fmt.Sprintf("%s: network set %s holds %v, want %v", cluster, name, sets[i].Nets, want))
	case e == expectGone && i >= 0:
		problems = append(problems, fmt.Sprintf("%s: network set %s is still there after the hostile pods went", cluster, name))
	}
	return problems
}

// netSetLeaks are the refused addresses in cluster's network sets of remote's pods.
func netSetLeaks(cluster, remote string, sets []status.NetSet, refused map[string]string) []string {
	var out []string
	for _, s := range sets {
		if s.Source.Cluster != remote {
			continue
		}
		for _, n := range s.Nets {
			p, err := netip.ParsePrefix(n)
			if err != nil {
				continue
			}
			if reason, ok := refused[p.Addr().String()]; ok {
				out = append(out, fmt.Sprintf("%s: network set %s holds %s, which %s may not publish (%s)", cluster, s.Name, n, remote, reason))
			}
		}
	}
	return out
}

// claims are the ranges of the fake nodes: none may be a peer's allowed IP or a route.
func (h *hostileRun) claims() []netip.Prefix {
	var out []netip.Prefix
	for _, n := range h.nodes {
		out = append(out, netip.MustParsePrefix(n.PodCIDR))
	}
	return out
}

// wireguardLeaks reads every node of the consumer: its device for the remote may have no fake
// node as a peer, no claimed range among its allowed IPs and no route for one, no route
// outside the remote's range; its agent must count every fake node under its reason
// (expectScenario), or none (expectGone).
func (h *hostileRun) wireguardLeaks(ctx context.Context, e expect) []string {
	rec := h.l.Record()
	device := peers.DeviceName(h.remote)
	remoteRange := netip.MustParsePrefix(layout.SpecOf(h.remote).PodCIDR)
	var problems []string
	for _, n := range rec.Nodes.Nodes {
		if n.Cluster != h.consumer {
			continue
		}
		ci := slices.IndexFunc(rec.Controllers, func(c layout.Controller) bool { return c.Component == layout.WireGuardComponent && c.Node == n.Name })
		if ci < 0 {
			problems = append(problems, fmt.Sprintf("%s: semaphore-wireguard does not run", n.Name))
			continue
		}
		root, err := status.ContainerRoot(rec.Controllers[ci].PodUID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		allowed, err := status.DeviceAllowedIPs(root, device)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading %s: %v", n.Name, device, err))
			continue
		}
		problems = append(problems, deviceLeaks(n.Name, device, allowed, h.keys, h.claims())...)
		out, err := execOutput("ip", "-n", n.Netns, "-o", "route", "show", "table", "all")
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading the routes: %v", n.Name, err))
			continue
		}
		problems = append(problems, routeLeaks(n.Name, out, device, remoteRange, h.claims())...)
		if e == expectNoLeak {
			continue
		}
		skips, err := scrapeSkips(ctx, rec.Controllers[ci], h.remote)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: semaphore-wireguard's metrics: %v", n.Name, err))
			continue
		}
		want := map[string]float64{}
		if e == expectScenario {
			want = wantSkips(h.nodes)
		}
		if !equalCounts(skips, want) {
			problems = append(problems, fmt.Sprintf("%s: semaphore_wg_skipped_peers{remote=%q} is %v, want %v", n.Name, h.remote, skips, want))
		}
	}
	return problems
}

// deviceLeaks are the peers of a device (allowed IPs by public key) that are fake nodes, and
// the allowed IPs that are claims.
func deviceLeaks(node, device string, allowed map[string][]string, fake map[string]string, claims []netip.Prefix) []string {
	var out []string
	for key, ips := range allowed {
		if name, ok := fake[key]; ok {
			out = append(out, fmt.Sprintf("%s: %s has fake node %s as a peer, allowed IPs %v", node, device, name, ips))
			continue
		}
		for _, ip := range ips {
			if p, err := netip.ParsePrefix(ip); err == nil && slices.Contains(claims, p.Masked()) {
				out = append(out, fmt.Sprintf("%s: %s gives a peer the claimed range %s", node, device, ip))
			}
		}
	}
	return out
}

// routeKinds are the route types `ip route` prints before a destination.
var routeKinds = []string{"unicast", "local", "broadcast", "anycast", "multicast", "unreachable", "prohibit", "blackhole", "throw", "nat"}

// routeLeaks are the routes of `ip -o route show table all` (out) for a claimed range, whatever
// their device, and those through device outside remoteRange, of its family (the kernel gives
// every device its IPv6 link-local and multicast routes).
func routeLeaks(node, out, device string, remoteRange netip.Prefix, claims []netip.Prefix) []string {
	var leaks []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(routeKinds, f[0]) {
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		dst, err := netip.ParsePrefix(f[0])
		if err != nil {
			a, aerr := netip.ParseAddr(f[0])
			if aerr != nil {
				continue // default, or something else that is no claim
			}
			dst = netip.PrefixFrom(a, a.BitLen())
		}
		dev := ""
		if i := slices.Index(f, "dev"); i >= 0 && i+1 < len(f) {
			dev = f[i+1]
		}
		switch {
		case slices.Contains(claims, dst.Masked()):
			leaks = append(leaks, fmt.Sprintf("%s: a route for the claimed %s: %s", node, dst, strings.TrimSpace(line)))
		case dev == device && dst.Addr().Is4() == remoteRange.Addr().Is4() && (dst.Bits() < remoteRange.Bits() || !remoteRange.Contains(dst.Addr())):
			leaks = append(leaks, fmt.Sprintf("%s: a route through %s outside %s: %s", node, device, remoteRange, strings.TrimSpace(line)))
		}
	}
	return leaks
}

// scrapeSkips are an agent's semaphore_wg_skipped_peers of remote by reason (not_annotated, a
// node that does not peer with this cluster at all, left out), the zero ones too.
func scrapeSkips(ctx context.Context, c layout.Controller, remote string) (map[string]float64, error) {
	ss, err := status.Scrape(ctx, c.Admin, "semaphore_wg_", 2*time.Second)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range ss {
		if s.Name == "semaphore_wg_skipped_peers" && s.Labels["remote"] == remote && s.Labels["reason"] != peers.ReasonNotAnnotated && s.Value != 0 {
			out[s.Labels["reason"]] += s.Value
		}
	}
	return out, nil
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// execOutput runs a command and returns its output, or its error with what it wrote to stderr.
func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return string(out), err
}
