package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
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
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	versions := &writes{}
	before, err := writtenState(watching, l, versions)
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
	problems = append(problems, rewrittenSince(ctx, l, before, versions)...)
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
// components in every cluster, by cluster, kind and name. With versions, it also watches them
// from the list on until ctx is done, recording every version written meanwhile.
func writtenState(ctx context.Context, l *env.Lab, versions *writes) (map[string]*unstructured.Unstructured, error) {
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
			opts := metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + k.component}
			list, err := dyn.Resource(k.resource).List(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: listing %s: %w", cluster, k.resource.Resource, err)
			}
			key := func(o *unstructured.Unstructured) string {
				return fmt.Sprintf("%s %s %s/%s", cluster, k.resource.Resource, o.GetNamespace(), o.GetName())
			}
			for _, o := range list.Items {
				out[key(&o)] = &o
			}
			if versions != nil {
				opts.ResourceVersion = list.GetResourceVersion()
				w, err := dyn.Resource(k.resource).Watch(ctx, opts)
				if err != nil {
					return nil, fmt.Errorf("%s: watching %s: %w", cluster, k.resource.Resource, err)
				}
				go versions.record(w, key)
			}
		}
	}
	return out, nil
}

// writes are the versions of objects a watch saw, by writtenState's key, in order.
type writes struct {
	mu       sync.Mutex
	versions map[string][]*unstructured.Unstructured
}

// record adds every object w delivers until it ends (its context done).
func (ws *writes) record(w watch.Interface, key func(*unstructured.Unstructured) string) {
	for e := range w.ResultChan() {
		if o, ok := e.Object.(*unstructured.Unstructured); ok {
			ws.mu.Lock()
			if ws.versions == nil {
				ws.versions = map[string][]*unstructured.Unstructured{}
			}
			ws.versions[key(o)] = append(ws.versions[key(o)], o)
			ws.mu.Unlock()
		}
	}
}

// of are the versions of key written, in order.
func (ws *writes) of(key string) []*unstructured.Unstructured {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Clone(ws.versions[key])
}

// rewrittenSince names what changed since before: written, made or deleted. A rewritten
// object is told one write at a time, from versions.
func rewrittenSince(ctx context.Context, l *env.Lab, before map[string]*unstructured.Unstructured, versions *writes) []string {
	after, err := writtenState(ctx, l, nil)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(before)) {
		switch v, ok := after[key]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("the upgrade deleted %s", key))
		case v.GetResourceVersion() != before[key].GetResourceVersion():
			problems = append(problems, fmt.Sprintf("the upgrade rewrote %s:\n%s", key, steps(before[key], versions.of(key), v)))
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

// steps tells each write from before to after, through the versions a watch saw (after
// alone when it saw none).
func steps(before *unstructured.Unstructured, seen []*unstructured.Unstructured, after *unstructured.Unstructured) string {
	if len(seen) == 0 {
		seen = []*unstructured.Unstructured{after}
	}
	var b strings.Builder
	prev := before
	for i, v := range seen {
		fmt.Fprintf(&b, "write %d of %d (-before +after):\n%s", i+1, len(seen), rewrite(prev, v))
		prev = v
	}
	return b.String()
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
