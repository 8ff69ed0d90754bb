package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// The mesh's drift: every mirror, global service and network set of every cluster compared
// with what the clusters it copies hold, whatever Services and pods they hold (the lab's
// status only knows its sample workloads). The soak asks for it after its churn. Each side is
// read with one list per kind and cluster, and compared with the controllers' own names and
// rules (mirror.ServiceName, global.SliceName, netset.Nets), endpoints down to each address's
// ready condition.

// clusterObjects are what one cluster holds that the mesh copies or writes.
type clusterObjects struct {
	services []corev1.Service
	slices   []discoveryv1.EndpointSlice
	// policyPods are the pods carrying the policy label.
	policyPods []corev1.Pod
	sets       []calico.GlobalNetworkSet
}

// listClusterObjects reads cluster's Services, EndpointSlices, labelled pods and
// semaphore-policy's GlobalNetworkSets.
func listClusterObjects(ctx context.Context, l *env.Lab, cluster string) (*clusterObjects, error) {
	c := l.Cluster(cluster)
	var o clusterObjects
	svcs, err := c.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	o.services = svcs.Items
	eps, err := c.Client.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	o.slices = eps.Items
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: layout.PolicyLabel})
	if err != nil {
		return nil, err
	}
	o.policyPods = pods.Items
	if o.sets, err = status.PolicySets(ctx, c.Config); err != nil {
		return nil, err
	}
	return &o, nil
}

// meshSize counts what meshDrift compared: the mirrors, global slices and network sets of
// every cluster.
type meshSize struct{ mirrors, globalSlices, sets int }

func (m meshSize) String() string {
	return fmt.Sprintf("%d mirrors, %d global slices, %d network sets", m.mirrors, m.globalSlices, m.sets)
}

// size counts the mesh's objects in o.
func (o *clusterObjects) size() meshSize {
	var m meshSize
	for _, s := range o.services {
		if _, ok := mirror.SourceOf(s.Labels); ok && s.Namespace == layout.SemaphoreNamespace {
			m.mirrors++
		}
	}
	for _, s := range o.slices {
		if s.Namespace == layout.SemaphoreNamespace && s.Labels[global.LabelCluster] != "" {
			m.globalSlices++
		}
	}
	m.sets = len(o.sets)
	return m
}

// meshDrift compares every cluster's mirrors, global services and network sets with what the
// other clusters hold, and returns each difference (none when the mesh is in sync) and how
// much it compared.
func meshDrift(ctx context.Context, l *env.Lab) ([]string, meshSize, error) {
	objects := map[string]*clusterObjects{}
	var size meshSize
	for _, name := range layout.ClusterNames() {
		o, err := listClusterObjects(ctx, l, name)
		if err != nil {
			return nil, size, fmt.Errorf("%s: %w", name, err)
		}
		objects[name] = o
		n := o.size()
		size.mirrors, size.globalSlices, size.sets = size.mirrors+n.mirrors, size.globalSlices+n.globalSlices, size.sets+n.sets
	}
	var drift []string
	for _, local := range layout.ClusterNames() {
		for _, remote := range layout.RemotesOf(local) {
			drift = append(drift, mirrorDrift(local, objects[local], remote, objects[remote])...)
			drift = append(drift, setDrift(local, objects[local], remote, objects[remote])...)
		}
		// A global service's slices come from every cluster, the local one too.
		for _, source := range layout.ClusterNames() {
			drift = append(drift, globalDrift(local, objects[local], source, objects[source])...)
		}
	}
	slices.Sort(drift)
	return drift, size, nil
}

// endpointsOf are the endpoints of the slices of Service name in namespace, each as
// "address" or "address (not ready)", sorted.
func endpointsOf(all []discoveryv1.EndpointSlice, namespace, name string) []string {
	var out []string
	for _, s := range all {
		if s.Namespace == namespace && s.Labels[discoveryv1.LabelServiceName] == name {
			out = append(out, sliceEndpoints(s)...)
		}
	}
	slices.Sort(out)
	return out
}

func sliceEndpoints(s discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		// A nil ready condition means ready (the EndpointSlice API's rule).
		suffix := ""
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			suffix = " (not ready)"
		}
		for _, a := range e.Addresses {
			out = append(out, a+suffix)
		}
	}
	slices.Sort(out)
	return out
}

// mirrorDrift compares local's mirrors of remote with the Services remote selects for
// mirroring: one mirror each, with the Service's ports and its endpoints, and no other.
func mirrorDrift(local string, lo *clusterObjects, remote string, ro *clusterObjects) []string {
	mirrors := map[string]*corev1.Service{}
	for i, s := range lo.services {
		if src, ok := mirror.SourceOf(s.Labels); ok && s.Namespace == layout.SemaphoreNamespace && src.Cluster == remote {
			mirrors[s.Name] = &lo.services[i]
		}
	}
	var drift []string
	for i, svc := range ro.services {
		if svc.Labels[layout.MirrorLabel] != "true" {
			continue
		}
		src := mirror.Source{Cluster: remote, Namespace: svc.Namespace, Name: svc.Name}
		name := mirror.ServiceName(src)
		m, ok := mirrors[name]
		delete(mirrors, name)
		if !ok {
			drift = append(drift, fmt.Sprintf("%s: no mirror of %s", local, src))
			continue
		}
		if change, _ := mirror.UpdateService(mirror.Service(src, layout.SemaphoreNamespace, &ro.services[i]), m); change != mirror.NoChange {
			drift = append(drift, fmt.Sprintf("%s: mirror %s differs from %s (ports, type)", local, name, src))
		}
		want, got := endpointsOf(ro.slices, svc.Namespace, svc.Name), endpointsOf(lo.slices, layout.SemaphoreNamespace, name)
		if !slices.Equal(want, got) {
			drift = append(drift, fmt.Sprintf("%s: mirror %s has endpoints %v, %s has %v", local, name, got, src, want))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(mirrors)) {
		drift = append(drift, fmt.Sprintf("%s: mirror %s of %s, which has no such Service selected", local, name, remote))
	}
	return drift
}

// globalDrift compares local's global services with source's part of them: for each Service
// source labels global, a global Service here and a copy of each of its slices, with the same
// endpoints; no copy of source's slices of a service source no longer has.
func globalDrift(local string, lo *clusterObjects, source string, so *clusterObjects) []string {
	present := map[string]bool{}
	copies := map[string]discoveryv1.EndpointSlice{}
	for _, s := range lo.services {
		if s.Namespace == layout.SemaphoreNamespace && s.Labels[global.LabelName] != "" {
			present[s.Name] = true
		}
	}
	for _, s := range lo.slices {
		if s.Namespace == layout.SemaphoreNamespace && s.Labels[global.LabelCluster] == source {
			copies[s.Name] = s
		}
	}
	var drift []string
	for _, svc := range so.services {
		if svc.Labels[global.LabelGlobalService] != "true" {
			continue
		}
		k := global.Key{Namespace: svc.Namespace, Name: svc.Name}
		if !present[global.ServiceName(k)] {
			drift = append(drift, fmt.Sprintf("%s: no global Service %s (for %s of %s)", local, global.ServiceName(k), k, source))
		}
		for _, s := range so.slices {
			if s.Namespace != k.Namespace || s.Labels[discoveryv1.LabelServiceName] != k.Name {
				continue
			}
			name := global.SliceName(k, source, s.Name)
			c, ok := copies[name]
			delete(copies, name)
			switch {
			case !ok:
				drift = append(drift, fmt.Sprintf("%s: no copy of %s's slice %s/%s of global service %s", local, source, s.Namespace, s.Name, k))
			case !slices.Equal(sliceEndpoints(c), sliceEndpoints(s)):
				drift = append(drift, fmt.Sprintf("%s: global slice %s has endpoints %v, %s's %s/%s has %v", local, name, sliceEndpoints(c), source, s.Namespace, s.Name, sliceEndpoints(s)))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(copies)) {
		drift = append(drift, fmt.Sprintf("%s: global slice %s copies a slice %s no longer has", local, name, source))
	}
	return drift
}

// setDrift compares local's network sets of remote with remote's labelled pods: a set for each
// group with addresses (netset.Nets: the pods that count), holding exactly those, and no other.
func setDrift(local string, lo *clusterObjects, remote string, ro *clusterObjects) []string {
	groups := map[netset.Source][]*corev1.Pod{}
	for i, p := range ro.policyPods {
		src := netset.Source{Cluster: remote, Namespace: p.Namespace, Name: p.Labels[layout.PolicyLabel]}
		groups[src] = append(groups[src], &ro.policyPods[i])
	}
	want := map[string][]string{}
	for src, pods := range groups {
		// The lab's pods publish only their own addresses: the rules alone hold every one.
		if nets, _, _ := netset.Nets(pods, addrguard.Remote{}); len(nets) > 0 {
			want[netset.SetName(src)] = nets
		}
	}
	var drift []string
	for _, set := range lo.sets {
		if src, ok := netset.SourceOf(set.Labels); !ok || src.Cluster != remote {
			continue
		}
		nets, ok := want[set.Name]
		delete(want, set.Name)
		switch {
		case !ok:
			drift = append(drift, fmt.Sprintf("%s: GlobalNetworkSet %s of %s, which has no such pods", local, set.Name, remote))
		case !slices.Equal(slices.Sorted(slices.Values(set.Spec.Nets)), slices.Sorted(slices.Values(nets))):
			drift = append(drift, fmt.Sprintf("%s: GlobalNetworkSet %s has %v, %s's pods %v", local, set.Name, set.Spec.Nets, remote, nets))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		drift = append(drift, fmt.Sprintf("%s: no GlobalNetworkSet %s of %s's pods %s", local, name, remote, strings.Join(want[name], ", ")))
	}
	return drift
}
