package hostile

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// The scenario's sizes and bounds.
const (
	// hostileNodePrefix starts the fake Nodes' names: after "merit-node-", so that the real
	// nodes come first by name and remain the peers within the peer limit.
	hostileNodePrefix = "z-hostile-"
	// hostileOverCap is how many labelled Services beyond the cap the remote creates.
	hostileOverCap = 20
	// hostileAnnotationBytes is the size of the big Service's annotation (the API server allows
	// 256 KiB of annotations per object).
	hostileAnnotationBytes = 200 << 10
	// hostileFloodFor is how long the EndpointSlice updates go on.
	hostileFloodFor = 40 * time.Second
	// hostileMinFloodRate is the fewest updates a second the flood must make to be one: held to
	// its CPU share, it makes 20 to 30 while the consumers follow each; far fewer would test
	// nothing, and fails the scenario rather than pass it.
	hostileMinFloodRate = 10
	// hostileSettle bounds the wait for the consumers to show the scenario's effects, for the
	// alert to fire, and for the lab to be healthy again after the cleanup.
	hostileSettle = 2 * time.Minute
	// hostileBaseline is the window of honest traffic before the scenario that the flood's is
	// compared with.
	hostileBaseline = 30 * time.Second
	// hostileAlert is the alert the refusals must fire.
	hostileAlert = "SemaphoreRemoteAddressesRefused"
)

// hostileRun is one run of the scenario.
type hostileRun struct {
	l                        *env.Lab
	remote, consumer         string
	admin                    kubernetes.Interface
	nodes                    []fakeNode
	keys                     map[string]string // public key -> fake node
	services                 []string
	claim, honestEndpoint    string
	honestPod, hostNetworkIP string
	// refused are the addresses no consumer object may hold, with the reason.
	refused map[string]string
	// metadataErr is how the remote's API server answered the EndpointSlice with the metadata
	// address (nil: it took it).
	metadataErr error
	// cleaned tells whether the objects have been deleted.
	cleaned bool
}

// Check runs the scenario and returns the problems.
func Check(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintf(l.Out(), "Hostile remote (%s towards %s, with %s's admin credentials)\n", layout.HostileRemote, layout.HostileConsumer, layout.HostileRemote)
	rec := l.Record()
	if rec.NodesSkipped() {
		fmt.Fprintln(l.Out(), "  skipped: no nodes, so no controllers run")
		return nil
	}
	h, err := newHostileRun(l, rec)
	if err != nil {
		return []string{fmt.Sprintf("hostile remote: %v", err)}
	}
	share, err := h.holdToShare()
	if err != nil {
		return []string{fmt.Sprintf("hostile remote: %v", err)}
	}
	// Deferred first, so that it runs last: after the cleanup below, whose deletes are the
	// remote's too.
	defer func() {
		if err := share.Close(); err != nil {
			l.Logf("hostile remote: letting %s out of its CPU share: %v", h.remote, err)
		}
	}()
	start := time.Now()
	defer func() {
		if err := h.cleanUp(context.WithoutCancel(ctx)); err != nil {
			l.Logf("hostile remote: cleaning up: %v", err)
		}
	}()
	if err := h.create(ctx); err != nil {
		return []string{fmt.Sprintf("hostile remote: creating the objects in %s: %v", h.remote, err)}
	}
	floodStart := time.Now()
	flood, seen := h.floodWatching(ctx, share, hostileFloodFor)
	floodEnd := time.Now()
	took := floodEnd.Sub(floodStart)
	fmt.Fprintf(l.Out(), "  flood: %d EndpointSlice updates in %s (%.0f/s, one client without a rate limit), %d failed; %d looks at the consumers meanwhile\n",
		flood.OK+flood.Failed, took.Round(100*time.Millisecond), float64(flood.OK)/took.Seconds(), flood.Failed, flood.Looks)
	fmt.Fprintf(l.Out(), "  the attacker (%s's API server and etcd, the flood's client), held to a CPU share (cpu.shares %d, the least), used %.2f of the machine's %d processors\n",
		h.remote, hostileShares, flood.CPU.Seconds()/took.Seconds(), runtime.NumCPU())
	if rate := float64(flood.OK) / took.Seconds(); rate < hostileMinFloodRate {
		seen = append(seen, fmt.Sprintf("the flood made %.0f updates a second, fewer than the %d that make it one", rate, hostileMinFloodRate))
	}
	problems := append(seen, h.trafficDuring(rec, start, floodStart, floodEnd)...)
	problems = append(problems, h.waitFor(ctx, "the consumers to show exactly the scenario's effects", func(ctx context.Context) []string {
		return h.leaks(ctx, expectScenario)
	})...)
	problems = append(problems, h.countsAndAlert(ctx)...)
	problems = append(problems, h.pluginCheck(ctx)...)
	problems = append(problems, h.memory(ctx, time.Since(start))...)
	status.PrintRefusals(ctx, l.Out(), l.Record())
	if err := h.cleanUp(ctx); err != nil {
		return append(problems, fmt.Sprintf("hostile remote: cleaning up: %v", err))
	}
	return append(problems, h.backToNormal(ctx)...)
}

// newHostileRun picks the addresses the scenario claims and publishes.
func newHostileRun(l *env.Lab, rec *layout.Record) (*hostileRun, error) {
	remoteRange := netip.MustParsePrefix(layout.SpecOf(layout.HostileRemote).PodCIDR)
	consumerPods := rec.PodIPs(layout.ForwarderCluster, layout.ForwarderName)
	if len(consumerPods) == 0 || layout.ForwarderCluster != layout.HostileConsumer {
		return nil, fmt.Errorf("no %s pod in %s whose address to claim", layout.ForwarderName, layout.HostileConsumer)
	}
	var foreign string
	for _, n := range rec.Nodes.Nodes {
		if n.Name == layout.NodeName(layout.HostileRemote, 0) {
			foreign = cmp.Or(n.ExternalIP, n.InternalIP) // the address it publishes
		}
	}
	port, err := l.ListenPort(layout.HostileRemote, layout.HostileConsumer)
	if err != nil {
		return nil, err
	}
	h := &hostileRun{
		l: l, remote: layout.HostileRemote, consumer: layout.HostileConsumer, admin: l.Cluster(layout.HostileRemote).Client,
		nodes: hostileNodes(remoteRange, netip.MustParsePrefix(layout.SpecOf(layout.HostileConsumer).PodCIDR),
			layout.NodePodCIDR(layout.HostileRemote, layout.NodesPerCluster-1), foreign, port),
		keys:           map[string]string{},
		services:       hostileServiceNames(layout.HostileMirrorCap, hostileOverCap),
		claim:          consumerPods[0],
		honestEndpoint: layout.AddrAdd(remoteRange.Addr(), 250).String(),
		honestPod:      layout.AddrAdd(remoteRange.Addr(), 249).String(),
		hostNetworkIP:  layout.AddrAdd(remoteRange.Addr(), 252).String(),
	}
	for _, p := range rec.Pods {
		if slices.Contains([]string{h.honestEndpoint, h.honestPod, h.hostNetworkIP}, p.IP) {
			return nil, fmt.Errorf("pod %s/%s of %s has address %s, which the scenario publishes", p.Namespace, p.Name, p.Cluster, p.IP)
		}
	}
	h.refused = map[string]string{metadataAddr: addrguard.ReasonSpecial, h.hostNetworkIP: netset.ReasonHostNetwork}
	for _, e := range hostileEndpoints(h.claim, h.honestEndpoint) {
		if e.Reason != "" {
			h.refused[e.Addr] = e.Reason
		}
	}
	return h, nil
}

// waitFor runs check every second until it finds no problem, for up to hostileSettle, and
// returns the last problems.
func (h *hostileRun) waitFor(ctx context.Context, what string, check func(ctx context.Context) []string) []string {
	start := time.Now()
	for {
		problems := check(ctx)
		if len(problems) == 0 {
			fmt.Fprintf(h.l.Out(), "  waited %s for %s\n", time.Since(start).Round(100*time.Millisecond), what)
			return nil
		}
		if time.Since(start) > hostileSettle || ctx.Err() != nil {
			return problems
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// consumers are the clusters that read the hostile remote: all the others.
func (h *hostileRun) consumers() []string { return layout.RemotesOf(h.remote) }

// expect is what the consumers must show.
type expect int

const (
	// expectNoLeak: nothing refused in any mirror, set, peer or route, no mirror beyond the
	// limit: what must hold at every moment, the flood's included.
	expectNoLeak expect = iota
	// expectScenario: that, and exactly the scenario's effects, once the consumers have caught
	// up: the first HostileMirrorCap Services mirrored, the honest endpoint and pod address
	// there, every fake node skipped under its reason.
	expectScenario
	// expectGone: the objects are deleted, and nothing of them is left.
	expectGone
)

// backToNormal checks, once the scenario's objects are gone, that the consumers hold nothing of
// them (no mirror, set, peer, route or skipped peer) and that the lab's status is as healthy as
// before: what was refused stays refused, and what the remote no longer publishes goes.
func (h *hostileRun) backToNormal(ctx context.Context) []string {
	problems := h.waitFor(ctx, "the consumers to forget the hostile objects", func(ctx context.Context) []string {
		return h.leaks(ctx, expectGone)
	})
	if len(problems) > 0 {
		return problems
	}
	if problems := h.reportSelfHarmed(ctx); len(problems) > 0 {
		return problems
	}
	start := time.Now()
	if _, problems := status.WaitReady(ctx, h.l.Record(), hostileSettle, h.l.Exited()); len(problems) > 0 {
		for i, p := range problems {
			problems[i] = "after the hostile remote: " + p
		}
		return problems
	}
	fmt.Fprintf(h.l.Out(), "  the lab's status is healthy again %s after the cleanup (mirrors, sets, WireGuard peers, global service, DNS, readiness)\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// reportSelfHarmed says which of the remote's own controllers refused addresses of their
// remotes as local_address: they took the fake Nodes' ranges (0.0.0.0/1 and 128.0.0.0/1 hold
// every cluster's) for their own cluster's, as they must. Once the Nodes are gone, the change of
// their local ranges makes them reconcile every remote object again, so they admit those
// addresses by themselves: the healthy status that follows shows it, with no restart.
func (h *hostileRun) reportSelfHarmed(ctx context.Context) []string {
	all, err := status.Refusals(ctx, h.l.Record())
	if err != nil {
		return []string{fmt.Sprintf("the controllers' refusals after the cleanup: %v", err)}
	}
	var counts []string
	for _, r := range all {
		if r.Cluster == h.remote && r.Reason == addrguard.ReasonLocal {
			counts = append(counts, fmt.Sprintf("%s %.0f of %s", r.Component, r.Value, r.Remote))
		}
	}
	if len(counts) == 0 {
		fmt.Fprintf(h.l.Out(), "  %s's own controllers refused nothing as local while its fake Nodes were there\n", h.remote)
		return nil
	}
	fmt.Fprintf(h.l.Out(), "  %s's own controllers took the fake Nodes' ranges for %s's and refused addresses of their remotes as %s (%s);\n"+
		"    with the Nodes gone they admit them again by themselves\n", h.remote, h.remote, addrguard.ReasonLocal, strings.Join(counts, ", "))
	return nil
}
