package status

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// GlobalEndpoint is one endpoint of a global Service's EndpointSlices.
type GlobalEndpoint struct {
	// Cluster is the cluster whose slice the endpoint's slice copies.
	Cluster string
	Addr    string
	Ready   bool
	// Zones are the endpoint's zone hints, sorted.
	Zones []string
}

// GlobalServiceStatus is one global Service of semaphore-service-mirror.
type GlobalServiceStatus struct {
	Name      string
	Key       global.Key
	ClusterIP string
	Ports     []string
	// DefinitionFrom is the cluster whose definition the Service follows.
	DefinitionFrom string
	// Slices counts its EndpointSlices by the cluster they copy.
	Slices map[string]int
	// Endpoints are sorted by cluster and address.
	Endpoints []GlobalEndpoint
}

// endpointsOf are the addresses of the endpoints copied from cluster, and how many of them are
// not ready.
func (s GlobalServiceStatus) endpointsOf(cluster string) (addrs []string, notReady int) {
	for _, e := range s.Endpoints {
		if e.Cluster != cluster {
			continue
		}
		addrs = append(addrs, e.Addr)
		if !e.Ready {
			notReady++
		}
	}
	return addrs, notReady
}

// listGlobalServices lists the global Services of semaphore-service-mirror in a cluster, with
// their EndpointSlices.
func listGlobalServices(ctx context.Context, kubeconfig string) ([]GlobalServiceStatus, error) {
	return listWithSlices(ctx, kubeconfig, ownership.ManagedBy+"="+ownership.ServiceMirror+","+global.LabelName, globalServiceOf)
}

// globalServiceOf is the status of global Service svc, whose EndpointSlices are epSlices.
func globalServiceOf(svc *corev1.Service, epSlices []discoveryv1.EndpointSlice) GlobalServiceStatus {
	s := GlobalServiceStatus{
		Name: svc.Name, ClusterIP: svc.Spec.ClusterIP, Slices: map[string]int{}, Ports: servicePorts(svc),
		DefinitionFrom: svc.Annotations[global.AnnotationDefinitionFrom],
	}
	s.Key, _ = global.KeyOf(svc.Labels)
	for _, sl := range epSlices {
		from := sl.Labels[global.LabelCluster]
		s.Slices[from]++
		for _, e := range sl.Endpoints {
			ge := GlobalEndpoint{Cluster: from, Ready: e.Conditions.Ready == nil || *e.Conditions.Ready}
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					ge.Zones = append(ge.Zones, z.Name)
				}
			}
			slices.Sort(ge.Zones)
			for _, a := range e.Addresses {
				ge.Addr = a
				s.Endpoints = append(s.Endpoints, ge)
			}
		}
	}
	slices.SortFunc(s.Endpoints, func(a, b GlobalEndpoint) int { return strings.Compare(a.Cluster+" "+a.Addr, b.Cluster+" "+b.Addr) })
	return s
}

// GlobalSource is echo's Service in one cluster, as users label it, and its own EndpointSlices.
type GlobalSource struct {
	Global, LocalFirst bool
	Ports              []string
	Slices, Endpoints  int
}

// listGlobalSource reads echo's Service in a cluster (none when it does not exist).
func listGlobalSource(ctx context.Context, kubeconfig string) ([]GlobalSource, error) {
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	svc, err := client.CoreV1().Services(layout.SampleNamespace).Get(ctx, layout.GlobalName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	epSlices, err := client.DiscoveryV1().EndpointSlices(layout.SampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + layout.GlobalName})
	if err != nil {
		return nil, err
	}
	s := GlobalSource{
		Global:     svc.Labels[global.LabelGlobalService] == "true",
		LocalFirst: svc.Labels[global.LabelRoutingStrategy] == global.LocalFirst,
		Slices:     len(epSlices.Items),
		Ports:      servicePorts(svc),
	}
	for _, sl := range epSlices.Items {
		for _, e := range sl.Endpoints {
			s.Endpoints += len(e.Addresses)
		}
	}
	return []GlobalSource{s}, nil
}

// globalMetrics is what a cluster's service-mirror replicas export of global services: the
// largest value of any replica (a standby exports nothing, or zeros).
type globalMetrics struct {
	Found      bool
	Services   float64
	LocalZones float64
	Conflicts  float64
	Err        error
}

// scrapeGlobalMetrics reads the global-service gauges of every service-mirror replica, by cluster.
func scrapeGlobalMetrics(ctx context.Context, rec *layout.Record) map[string]globalMetrics {
	out := map[string]globalMetrics{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range rec.Controllers {
		if c.Component != ownership.ServiceMirror {
			continue
		}
		wg.Go(func() {
			samples, err := Scrape(ctx, c.Admin, "semaphore_service_mirror_global_", 2*time.Second)
			mu.Lock()
			defer mu.Unlock()
			m := out[c.Cluster]
			if err != nil {
				m.Err = err
			}
			for _, s := range samples {
				switch s.Name {
				case "semaphore_service_mirror_global_services":
					m.Found, m.Services = true, max(m.Services, s.Value)
				case "semaphore_service_mirror_global_local_zones":
					m.Found, m.LocalZones = true, max(m.LocalZones, s.Value)
				case "semaphore_service_mirror_global_conflicts":
					m.Conflicts = max(m.Conflicts, s.Value)
				}
			}
			out[c.Cluster] = m
		})
	}
	wg.Wait()
	return out
}

// globalStatus is the lab's global service in every cluster: semaphore-service-mirror's global
// Services and their slices, echo's own Services, what each CoreDNS answers for the global
// name, and the controllers' gauges.
type globalStatus struct {
	services perCluster[GlobalServiceStatus]
	sources  perCluster[GlobalSource]
	dns      []DNSAnswer // by cluster
	metrics  map[string]globalMetrics
}

func (g *globalStatus) collect(ctx context.Context, rec *layout.Record) {
	var wg sync.WaitGroup
	wg.Go(func() { g.services = listInEveryCluster(ctx, rec, listGlobalServices) })
	wg.Go(func() { g.sources = listInEveryCluster(ctx, rec, listGlobalSource) })
	wg.Go(func() { g.metrics = scrapeGlobalMetrics(ctx, rec) })
	wg.Go(func() {
		g.dns = lookupAll(ctx, rec.DNS, func(layout.DNSServer) []string { return []string{layout.GlobalDNSName()} })
	})
	wg.Wait()
	slices.SortFunc(g.dns, func(a, b DNSAnswer) int { return strings.Compare(a.Cluster, b.Cluster) })
}

// problems: echo's Service labelled global and local-first in every cluster; with nodes, the
// global Service in every cluster with echo's ports and exactly the addresses of every
// cluster's echo pods, all ready, the local ones hinted for the local zones and the others for
// none of them, the global name resolving to it, and the controllers counting the local zones
// and no conflict. Without nodes no controller runs: echo's Services must be there, with
// slices and no endpoint.
func (g *globalStatus) problems(rec *layout.Record) []string {
	problems := append(g.sources.listProblems(rec, "echo's Service"), g.services.listProblems(rec, "global Services")...)
	for _, c := range layout.ClusterNames() {
		if g.sources.errs[c] == nil {
			problems = append(problems, g.sourceProblems(rec, c)...)
		}
		if !rec.NodesSkipped() && g.services.errs[c] == nil {
			problems = append(problems, g.serviceProblems(rec, c)...)
		}
	}
	if rec.NodesSkipped() {
		return problems
	}
	name := global.ServiceName(layout.GlobalKey)
	for _, a := range g.dns {
		if got, ok := g.services.findItem(a.Cluster, func(s GlobalServiceStatus) bool { return s.Name == name }); ok {
			problems = append(problems, a.problems(got.ClusterIP, name)...)
		}
	}
	return problems
}

// serviceProblems: the global Service in cluster c, and no other, as globalServiceProblems
// wants it; the service mirror's gauges counting c's zones and no conflict.
func (g *globalStatus) serviceProblems(rec *layout.Record, c string) []string {
	var problems []string
	name := global.ServiceName(layout.GlobalKey)
	for _, got := range g.services.items[c] {
		if got.Name != name {
			problems = append(problems, fmt.Sprintf("%s: unexpected global Service %s/%s of %s", c, layout.SemaphoreNamespace, got.Name, got.Key))
		}
	}
	got, ok := g.services.findItem(c, func(s GlobalServiceStatus) bool { return s.Name == name })
	if !ok {
		return append(problems, fmt.Sprintf("%s: no global Service %s/%s of %s", c, layout.SemaphoreNamespace, name, layout.GlobalKey))
	}
	problems = append(problems, globalServiceProblems(rec, c, got)...)
	m := g.metrics[c]
	switch {
	case m.Err != nil:
		problems = append(problems, fmt.Sprintf("%s: service-mirror's metrics: %v", c, m.Err))
	case !m.Found:
		problems = append(problems, fmt.Sprintf("%s: service-mirror exports no semaphore_service_mirror_global_ gauges", c))
	case int(m.LocalZones) != len(rec.LocalZones(c)):
		problems = append(problems, fmt.Sprintf("%s: service-mirror counts %v local zones, want %d (%s)", c, m.LocalZones, len(rec.LocalZones(c)), strings.Join(rec.LocalZones(c), ", ")))
	case m.Conflicts != 0:
		problems = append(problems, fmt.Sprintf("%s: service-mirror counts %v conflicts of global services, want none (every cluster defines echo alike)", c, m.Conflicts))
	}
	return problems
}

// sourceProblems: echo's Service in cluster c, labelled, with its ports; without nodes, with
// its (empty) slices.
func (g *globalStatus) sourceProblems(rec *layout.Record, c string) []string {
	src, ok := g.sources.findItem(c, func(GlobalSource) bool { return true })
	switch {
	case !ok:
		return []string{fmt.Sprintf("%s: no Service %s/%s", c, layout.SampleNamespace, layout.GlobalName)}
	case !src.Global || !src.LocalFirst:
		return []string{fmt.Sprintf("%s: Service %s/%s is not labelled %s=true and %s=%s", c, layout.SampleNamespace, layout.GlobalName, global.LabelGlobalService, global.LabelRoutingStrategy, global.LocalFirst)}
	case !slices.Equal(src.Ports, layout.GlobalPorts):
		return []string{fmt.Sprintf("%s: Service %s/%s has ports %v, want %v", c, layout.SampleNamespace, layout.GlobalName, src.Ports, layout.GlobalPorts)}
	case rec.NodesSkipped() && src.Slices == 0:
		return []string{fmt.Sprintf("%s: Service %s/%s has no EndpointSlice yet", c, layout.SampleNamespace, layout.GlobalName)}
	case rec.NodesSkipped() && src.Endpoints > 0:
		return []string{fmt.Sprintf("%s: Service %s/%s has %d endpoints without nodes", c, layout.SampleNamespace, layout.GlobalName, src.Endpoints)}
	}
	return nil
}

// globalServiceProblems compares cluster c's global Service with what every cluster's echo
// pods and c's zones make it.
func globalServiceProblems(rec *layout.Record, c string, got GlobalServiceStatus) []string {
	var problems []string
	if got.Key != layout.GlobalKey {
		problems = append(problems, fmt.Sprintf("%s: global Service %s has labels of %s, want %s", c, got.Name, got.Key, layout.GlobalKey))
	}
	if !slices.Equal(got.Ports, layout.GlobalPorts) {
		problems = append(problems, fmt.Sprintf("%s: global Service %s has ports %v, want %v", c, got.Name, got.Ports, layout.GlobalPorts))
	}
	for _, from := range layout.ClusterNames() {
		addrs, notReady := got.endpointsOf(from)
		slices.Sort(addrs)
		switch want := rec.PodIPs(from, layout.GlobalName); {
		case got.Slices[from] == 0:
			problems = append(problems, fmt.Sprintf("%s: global Service %s has no EndpointSlice of %s", c, got.Name, from))
		case !slices.Equal(addrs, want):
			problems = append(problems, fmt.Sprintf("%s: global Service %s has endpoints %v of %s, want %v (its echo pods)", c, got.Name, addrs, from, want))
		case notReady > 0:
			problems = append(problems, fmt.Sprintf("%s: global Service %s has %d endpoints of %s not ready", c, got.Name, notReady, from))
		}
	}
	local := rec.LocalZones(c)
	for _, e := range got.Endpoints {
		switch {
		case e.Cluster == c && !slices.Equal(e.Zones, local):
			problems = append(problems, fmt.Sprintf("%s: global Service %s: local endpoint %s is hinted for zones %v, want %v", c, got.Name, e.Addr, e.Zones, local))
		case e.Cluster != c && len(e.Zones) == 0:
			problems = append(problems, fmt.Sprintf("%s: global Service %s: endpoint %s of %s has no zone hint (kube-proxy ignores the hints of all)", c, got.Name, e.Addr, e.Cluster))
		case e.Cluster != c && slices.ContainsFunc(e.Zones, func(z string) bool { return slices.Contains(local, z) }):
			problems = append(problems, fmt.Sprintf("%s: global Service %s: endpoint %s of %s is hinted for local zones %v", c, got.Name, e.Addr, e.Cluster, e.Zones))
		}
	}
	return problems
}

func (g *globalStatus) print(w io.Writer, rec *layout.Record) {
	section(w, fmt.Sprintf("Global services (semaphore-service-mirror: %s/%s in every cluster, labelled %s=true and %s=%s)",
		layout.SampleNamespace, layout.GlobalName, global.LabelGlobalService, global.LabelRoutingStrategy, global.LocalFirst))
	g.services.printRows(w, rec, func(c string, s GlobalServiceStatus) string {
		var b strings.Builder
		fmt.Fprintf(&b, "  %s\t%s\t%s\t%s\tdefinition of %s\n", c, s.Name, s.ClusterIP, strings.Join(s.Ports, ","), cmp.Or(s.DefinitionFrom, "?"))
		for _, from := range layout.ClusterNames() {
			fmt.Fprintf(&b, "  \t  from %s\t%d slices\t%s\n", from, s.Slices[from], endpointsLine(s.Endpoints, from))
		}
		return b.String()
	})
	tw := table(w)
	for _, c := range layout.ClusterNames() {
		line := fmt.Sprintf("  %s\t%s/%s", c, layout.SampleNamespace, layout.GlobalName)
		if src, ok := g.sources.findItem(c, func(GlobalSource) bool { return true }); ok {
			line += fmt.Sprintf("\t%s\tglobal %v, local-first %v\t%d slices, %d endpoints", strings.Join(src.Ports, ","), src.Global, src.LocalFirst, src.Slices, src.Endpoints)
		} else if err := g.sources.errs[c]; err != nil {
			line += "\terror: " + err.Error()
		} else {
			line += "\tmissing"
		}
		line += "\tlocal zones " + cmp.Or(strings.Join(rec.LocalZones(c), ", "), "none")
		if m, ok := g.metrics[c]; ok && m.Found {
			line += fmt.Sprintf("\tservice-mirror: %v global services, %v local zones, %v conflicts", m.Services, m.LocalZones, m.Conflicts)
		}
		fmt.Fprintln(tw, line)
	}
	for _, a := range g.dns {
		answer := strings.Join(a.Addrs, ", ")
		if a.Err != nil {
			answer = "error: " + a.Err.Error()
		}
		fmt.Fprintf(tw, "  %s\tCoreDNS: %s -> %s\n", a.Cluster, a.Name, answer)
	}
	tw.Flush()
	if rec.NodesSkipped() {
		fmt.Fprintf(w, "  without nodes no service-mirror runs: echo's Services only, with empty slices\n")
		return
	}
	if c := rec.PodsOf(layout.GlobalCluster, layout.GlobalClientName); len(c) > 0 {
		fmt.Fprintf(w, "  %s/%s sends to http://%s:%d/ every %s; what it got: tail -f %s\n", layout.GlobalCluster, layout.GlobalClientName, layout.GlobalDNSName(), layout.GlobalPort, layout.GlobalInterval, c[0].Log)
		fmt.Fprintf(w, "  fail over: kubectl --kubeconfig %s --context %s -n %s scale deployment %s --replicas 0\n", rec.Kubeconfig, layout.GlobalCluster, layout.SampleNamespace, layout.GlobalName)
	}
}

// endpointsLine lists the endpoints copied from cluster, with their zone hints: once for all
// of them when they are alike, as the service mirror makes them.
func endpointsLine(endpoints []GlobalEndpoint, cluster string) string {
	var eps, zones []string
	for _, e := range endpoints {
		if e.Cluster != cluster {
			continue
		}
		ep := e.Addr
		if !e.Ready {
			ep += " (not ready)"
		}
		eps = append(eps, ep)
		zones = append(zones, cmp.Or(strings.Join(e.Zones, ","), "none"))
	}
	if len(eps) == 0 {
		return "no endpoint"
	}
	alike := slices.Clone(zones)
	slices.Sort(alike)
	if len(slices.Compact(alike)) == 1 {
		return strings.Join(eps, ", ") + "\tzone hints " + zones[0]
	}
	for i := range eps {
		eps[i] += " (zone hints " + zones[i] + ")"
	}
	return strings.Join(eps, ", ")
}
