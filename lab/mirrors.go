package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
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

func (m *mirrorsStatus) collect(ctx context.Context, st *State) {
	m.perCluster = listInEveryCluster(ctx, st, listMirrors)
}

// find is the mirror named name in cluster.
func (m *mirrorsStatus) find(cluster, name string) (MirrorStatus, bool) {
	return m.findItem(cluster, func(s MirrorStatus) bool { return s.Name == name })
}

// problems: fluentd's mirror with its endpoints in every other cluster, and no other mirror.
// Without nodes there is no pod to mirror: only whether the clusters can be read is checked.
func (m *mirrorsStatus) problems(st *State) []string {
	problems := m.listProblems(st, "mirrors")
	if st.nodesSkipped() {
		return problems
	}
	want := expectedMirrors(st)
	for _, e := range want {
		if m.errs[e.Cluster] != nil {
			continue
		}
		got, ok := m.find(e.Cluster, e.Name())
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no mirror %s/%s of %s", e.Cluster, semaphoreNamespace, e.Name(), e.Source))
		case !slices.Equal(got.Ready, e.Endpoints):
			problems = append(problems, fmt.Sprintf("%s: mirror %s has ready endpoints %v, want %v", e.Cluster, e.Name(), got.Ready, e.Endpoints))
		}
	}
	// No cluster mirrors its own Services.
	for cluster, mirrors := range m.items {
		for _, got := range mirrors {
			if !slices.ContainsFunc(want, func(e expectedMirror) bool { return e.Cluster == cluster && e.Name() == got.Name }) {
				problems = append(problems, fmt.Sprintf("%s: unexpected mirror %s/%s", cluster, semaphoreNamespace, got.Name))
			}
		}
	}
	return problems
}

func (m *mirrorsStatus) print(w io.Writer, st *State) {
	section(w, fmt.Sprintf("Mirrored Services (semaphore-service-mirror, namespace %s)", semaphoreNamespace))
	m.printRows(w, st, func(c string, s MirrorStatus) string {
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
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	// The global services' objects are the service mirror's too (global.go shows them).
	managed := metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.ServiceMirror + ",!" + global.LabelName}
	svcs, err := client.CoreV1().Services(semaphoreNamespace).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	epSlices, err := client.DiscoveryV1().EndpointSlices(semaphoreNamespace).List(ctx, managed)
	if err != nil {
		return nil, err
	}
	var out []MirrorStatus
	for _, svc := range svcs.Items {
		m := MirrorStatus{Name: svc.Name, ClusterIP: svc.Spec.ClusterIP}
		m.Source, _ = mirror.SourceOf(svc.Labels)
		for _, p := range svc.Spec.Ports {
			m.Ports = append(m.Ports, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
		}
		for _, sl := range epSlices.Items {
			if sl.Labels[discoveryv1.LabelServiceName] != svc.Name {
				continue
			}
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
		out = append(out, m)
	}
	return out, nil
}
