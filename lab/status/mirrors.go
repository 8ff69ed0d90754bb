package status

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// MirrorStatus is one mirror Service.
type MirrorStatus struct {
	Name      string
	Source    mirror.Source
	ClusterIP string
	Ports     []string
	Ready     []string // addresses of the ready endpoints
	NotReady  int
}

// mirrorsStatus is the status of semaphore-service-mirror: its mirrors in every cluster.
type mirrorsStatus struct {
	perCluster[MirrorStatus]
}

func (m *mirrorsStatus) collect(ctx context.Context, rec *layout.Record) {
	m.perCluster = listInEveryCluster(ctx, rec, listMirrors)
}

// find is the mirror named name in cluster.
func (m *mirrorsStatus) find(cluster, name string) (MirrorStatus, bool) {
	return m.findItem(cluster, func(s MirrorStatus) bool { return s.Name == name })
}

// problems: fluentd's mirror with its endpoints in every other cluster, and no other mirror.
// Without nodes there is no pod to mirror: only whether the clusters can be read is checked.
func (m *mirrorsStatus) problems(rec *layout.Record) []string {
	problems := m.listProblems(rec, "mirrors")
	if rec.NodesSkipped() {
		return problems
	}
	want := expectedMirrors(rec)
	for _, e := range want {
		if m.errs[e.Cluster] != nil {
			continue
		}
		got, ok := m.find(e.Cluster, e.Name())
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no mirror %s/%s of %s", e.Cluster, layout.SemaphoreNamespace, e.Name(), e.Source))
		case !slices.Equal(got.Ready, e.Endpoints):
			problems = append(problems, fmt.Sprintf("%s: mirror %s has ready endpoints %v, want %v", e.Cluster, e.Name(), got.Ready, e.Endpoints))
		}
	}
	// No cluster mirrors its own Services.
	for cluster, mirrors := range m.items {
		for _, got := range mirrors {
			if !slices.ContainsFunc(want, func(e expectedMirror) bool { return e.Cluster == cluster && e.Name() == got.Name }) {
				problems = append(problems, fmt.Sprintf("%s: unexpected mirror %s/%s", cluster, layout.SemaphoreNamespace, got.Name))
			}
		}
	}
	return problems
}

func (m *mirrorsStatus) print(w io.Writer, rec *layout.Record) {
	section(w, fmt.Sprintf("Mirrored Services (semaphore-service-mirror, namespace %s)", layout.SemaphoreNamespace))
	m.printRows(w, rec, func(c string, s MirrorStatus) string {
		eps := fmt.Sprintf("%d ready", len(s.Ready))
		if len(s.Ready) > 0 {
			eps += ": " + strings.Join(s.Ready, ", ")
		}
		if s.NotReady > 0 {
			eps += fmt.Sprintf(" (+%d not ready)", s.NotReady)
		}
		return fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\tof %s\n", c, s.Name, s.ClusterIP, strings.Join(s.Ports, ","), eps, s.Source)
	})
}

// listMirrors lists the service mirror's Services and EndpointSlices in a cluster.
func listMirrors(ctx context.Context, kubeconfig string) ([]MirrorStatus, error) {
	// The global services' objects are the service mirror's too (global.go shows them).
	return listWithSlices(ctx, kubeconfig, ownership.ManagedBy+"="+ownership.ServiceMirror+",!"+global.LabelName, mirrorOf)
}

// mirrorOf is the status of mirror Service svc, whose EndpointSlices are epSlices.
func mirrorOf(svc *corev1.Service, epSlices []discoveryv1.EndpointSlice) MirrorStatus {
	m := MirrorStatus{Name: svc.Name, ClusterIP: svc.Spec.ClusterIP, Ports: servicePorts(svc)}
	m.Source, _ = mirror.SourceOf(svc.Labels)
	for _, sl := range epSlices {
		for _, e := range sl.Endpoints {
			// A nil ready condition means ready (the EndpointSlice API's rule).
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				m.Ready = append(m.Ready, e.Addresses...)
			} else {
				m.NotReady++
			}
		}
	}
	slices.Sort(m.Ready)
	return m
}

// expectedMirror is a mirror the sample workloads must lead to, and the name under which the
// cluster's CoreDNS (when the lab runs one there) must resolve it.
type expectedMirror struct {
	Cluster   string
	Source    mirror.Source
	Endpoints []string
}

// Name is the mirror Service's name.
func (e expectedMirror) Name() string { return mirror.ServiceName(e.Source) }

// DNSName is the name docs/coredns.md makes resolve to the mirror.
func (e expectedMirror) DNSName() string {
	return fmt.Sprintf("%s.%s.svc.cluster.%s", e.Source.Name, e.Source.Namespace, e.Source.Cluster)
}

// expectedMirrors are fluentd's mirrors: one in every cluster but its own.
func expectedMirrors(rec *layout.Record) []expectedMirror {
	src := mirror.Source{Cluster: layout.FluentdCluster, Namespace: layout.SampleNamespace, Name: layout.FluentdName}
	eps := rec.PodIPs(layout.FluentdCluster, layout.FluentdName)
	var out []expectedMirror
	for _, c := range layout.RemotesOf(layout.FluentdCluster) {
		out = append(out, expectedMirror{Cluster: c, Source: src, Endpoints: eps})
	}
	return out
}
