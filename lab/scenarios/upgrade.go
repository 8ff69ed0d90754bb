package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/release"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// checkUpgrade upgrades every cluster from the previous release (release.PreviousRelease, built
// from its commit) to this one while gcp's forwarders send to aws's fluentd and a probe pings
// across every tunnel, and expects no failed request, no tunnel down for longer than one
// handshake interval, no mirror (Service or EndpointSlice) and no GlobalNetworkSet written by
// the upgrade, and the mesh ready after it. The lab installs this release: every cluster goes down
// to the previous one first, and the mesh must be ready with it.
func checkUpgrade(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintf(l.Out(), "upgrade (every cluster from the previous release, %s, to this one, while the forwarders send)\n", release.PreviousRelease[:12])
	if !l.NodesRun() {
		fmt.Fprintln(l.Out(), "  skipped: no nodes, so no controllers run")
		return nil
	}
	start := time.Now()
	prev, err := l.BuildPreviousRelease(ctx)
	if err != nil {
		return []string{fmt.Sprintf("building the previous release: %v", err)}
	}
	this, err := l.ThisRelease(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	fmt.Fprintf(l.Out(), "  built the previous release %s from its commit in %s\n", prev.Version, time.Since(start).Round(time.Second))
	for image, digest := range this.Digests {
		if prev.Digests[image] == digest {
			return []string{fmt.Sprintf("%s is the same image (%s) in both releases: the upgrade would replace nothing", image, digest)}
		}
	}
	if problems := downgradeAll(ctx, l, prev); len(problems) > 0 {
		return problems
	}
	fmt.Fprintf(l.Out(), "  every cluster runs %s, the mesh ready\n", prev.Version)
	before, err := writtenState(ctx, l)
	if err != nil {
		return []string{err.Error()}
	}
	probe, skipped := startTunnelProbe(l.Record())
	if len(probe.pairs) == 0 {
		return append([]string{"no two workload pods of different clusters answer a ping:"}, skipped...)
	}
	from := time.Now()
	upgraded := upgradeAll(ctx, l, this)
	to := time.Now()
	problems := tunnelsDown(l, probe.finish(), len(skipped))
	if len(upgraded) > 0 {
		return append(upgraded, problems...)
	}
	fmt.Fprintf(l.Out(), "  every cluster upgraded to %s in %s, the mesh ready\n", this.Version, to.Sub(from).Round(time.Second))
	problems = append(problems, rewrittenSince(ctx, l, before)...)
	sent, err := observe.SenderStats(l.Record().PodsOf(layout.ForwarderCluster, layout.ForwarderName), from, to)
	if err != nil {
		return append(problems, fmt.Sprintf("reading the forwarders' logs: %v", err))
	}
	fmt.Fprintf(l.Out(), "  %s/%s -> %s's %s during the upgrade: %s\n", layout.ForwarderCluster, layout.ForwarderName, layout.FluentdCluster, layout.FluentdName, sent)
	if sent.Sent == 0 || sent.Failed > 0 {
		problems = append(problems, fmt.Sprintf("the forwarders during the upgrade: %s; want requests and none failed", sent))
	}
	return problems
}

// upgradeAll upgrades every cluster's umbrella release to rel, one after the other as an
// operator rolls a release out, and waits until the mesh is ready with it.
func upgradeAll(ctx context.Context, l *env.Lab, rel release.Release) []string {
	for _, cluster := range layout.ClusterNames() {
		if err := l.UpgradeUmbrellaTo(ctx, cluster, rel); err != nil {
			return []string{fmt.Sprintf("%s: helm upgrade to %s: %v", cluster, rel.Version, err)}
		}
	}
	return settle(ctx, l, "after the upgrade to "+rel.Version)
}

// downgradeAll takes every cluster's umbrella release to rel, the previous release, all at
// once, and waits until the mesh is ready with it: the scenario's starting point, where
// nothing is measured, so the clusters need not wait for each other (each helm upgrade waits
// for its rollout, about 25 s).
func downgradeAll(ctx context.Context, l *env.Lab, rel release.Release) []string {
	var g errgroup.Group
	for _, cluster := range layout.ClusterNames() {
		g.Go(func() error {
			if err := l.UpgradeUmbrellaTo(ctx, cluster, rel); err != nil {
				return fmt.Errorf("%s: helm upgrade to %s: %w", cluster, rel.Version, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return []string{err.Error()}
	}
	return settle(ctx, l, "after the upgrade to "+rel.Version)
}

// settle waits until every workload is available, records the pods (the controllers' are new)
// for the status and Prometheus, and waits until the mesh is ready.
func settle(ctx context.Context, l *env.Lab, when string) []string {
	start := time.Now()
	if err := l.WaitAvailable(ctx, 3*time.Minute); err != nil {
		return []string{fmt.Sprintf("%s: %v", when, err)}
	}
	available := time.Now()
	if err := l.RediscoverControllers(ctx); err != nil {
		return []string{fmt.Sprintf("%s: %v", when, err)}
	}
	found := time.Now()
	if _, problems := status.WaitReady(ctx, l.Record(), 5*time.Minute, l.Exited()); len(problems) > 0 {
		return append([]string{when + ", the mesh is not ready:"}, problems...)
	}
	fmt.Fprintf(l.Out(), "  settled %s in %s: workloads available after %s, controllers found in %s, the mesh ready in %s\n", when,
		time.Since(start).Round(100*time.Millisecond), available.Sub(start).Round(100*time.Millisecond),
		found.Sub(available).Round(100*time.Millisecond), time.Since(found).Round(100*time.Millisecond))
	return nil
}

// writtenState is every mirror Service and EndpointSlice and every GlobalNetworkSet of the
// components in every cluster, by cluster, kind and name.
func writtenState(ctx context.Context, l *env.Lab) (map[string]*unstructured.Unstructured, error) {
	sets, err := calico.Resource(layout.CalicoAPI)
	if err != nil {
		return nil, err
	}
	kinds := []struct {
		resource  schema.GroupVersionResource
		component string
	}{
		{corev1.SchemeGroupVersion.WithResource("services"), ownership.ServiceMirror},
		{discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), ownership.ServiceMirror},
		{sets, ownership.Policy},
	}
	out := map[string]*unstructured.Unstructured{}
	for _, cluster := range layout.ClusterNames() {
		dyn, err := dynamic.NewForConfig(l.Cluster(cluster).Config)
		if err != nil {
			return nil, err
		}
		for _, k := range kinds {
			list, err := dyn.Resource(k.resource).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + k.component})
			if err != nil {
				return nil, fmt.Errorf("%s: listing %s: %w", cluster, k.resource.Resource, err)
			}
			for _, o := range list.Items {
				out[fmt.Sprintf("%s %s %s/%s", cluster, k.resource.Resource, o.GetNamespace(), o.GetName())] = &o
			}
		}
	}
	return out, nil
}

// rewrittenSince names what changed since before: written, made or deleted.
func rewrittenSince(ctx context.Context, l *env.Lab, before map[string]*unstructured.Unstructured) []string {
	after, err := writtenState(ctx, l)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(before)) {
		switch v, ok := after[key]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("the upgrade deleted %s", key))
		case v.GetResourceVersion() != before[key].GetResourceVersion():
			problems = append(problems, fmt.Sprintf("the upgrade rewrote %s (-before +after):\n%s", key, rewrite(before[key], v)))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[key]; !ok {
			problems = append(problems, fmt.Sprintf("the upgrade made %s", key))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintf(l.Out(), "  none of the %d mirror Services, EndpointSlices and GlobalNetworkSets written by the upgrade\n", len(before))
	}
	return problems
}

// rewrite says how after differs from before, the same object: its content, and who wrote it
// when (managedFields), apart from the resourceVersion.
func rewrite(before, after *unstructured.Unstructured) string {
	b, a := before.DeepCopy(), after.DeepCopy()
	for _, o := range []*unstructured.Unstructured{a, b} {
		o.SetResourceVersion("")
	}
	return cmp.Diff(b.Object, a.Object)
}

// tunnelsDown prints the probe's longest gaps and names every tunnel down for longer than one
// handshake interval.
func tunnelsDown(l *env.Lab, gaps []tunnelGap, skipped int) []string {
	longest := gaps[0]
	fmt.Fprintf(l.Out(), "  tunnels during the upgrade: %d pairs of pods pinged every %s (%d left out: no answer before), longest without an answer %s (%s)\n",
		len(gaps), probeEvery, skipped, longest.longest.Round(10*time.Millisecond), longest.pair)
	var problems []string
	for _, g := range gaps {
		if g.longest > handshakeInterval {
			problems = append(problems, fmt.Sprintf("the tunnel %s was down for %s, longer than one handshake interval (%s)",
				g.pair, g.longest.Round(10*time.Millisecond), handshakeInterval))
		}
	}
	return problems
}
