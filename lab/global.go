package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// A global service: echo in sys-log, the sample program serving HTTP and logging every request
// with its client, in every cluster behind a Service of the same name labelled as global and
// local-first. semaphore-service-mirror serves it in every cluster as the selector-less
// semaphore/gl-sys-log-73736d-echo, with the EndpointSlices of all three clusters, the local
// cluster's endpoints zone-hinted for the local Nodes' zones and the others' for none of them:
// kube-proxy then sends to the local endpoints while any is ready, and to the other clusters'
// when none is. gcp's echo-client asks for it as echo.sys-log.svc.cluster.global, which the
// Corefile of docs/coredns.md resolves to the global Service. `lab check` scales gcp's echo to
// zero and back, and measures where the client's requests go.
const (
	globalName           = "echo"
	globalReplicas int32 = 2
	globalPortName       = "http"
	globalPort     int32 = 8080
	// globalCluster runs the client, and is the cluster whose echo the check takes away.
	globalCluster    = "gcp"
	globalClientName = "echo-client"
	// globalInterval is the client's time between requests: often enough to time a failover
	// to a fifth of a second.
	globalInterval = 200 * time.Millisecond
	// globalWindow is how long the check counts requests in each phase.
	globalWindow = 2 * time.Second
	// globalMaxOutage is the longest the client's requests may fail while its cluster's echo
	// goes away or comes back: the time for the EndpointSlice, the global copy and kube-proxy
	// to follow, with room to spare.
	globalMaxOutage = 5 * time.Second
)

// globalKey is the global service of the lab.
var globalKey = global.Key{Namespace: sampleNamespace, Name: globalName}

// globalDNSName is the name the Corefile of docs/coredns.md resolves to the global Service.
func globalDNSName() string {
	return fmt.Sprintf("%s.%s.svc.cluster.global", globalKey.Name, globalKey.Namespace)
}

// globalPorts are the ports of echo's Service in every cluster, and so of the global Service,
// as the status prints them.
var globalPorts = []string{fmt.Sprintf("%s:%d/%s", globalPortName, globalPort, corev1.ProtocolTCP)}

// createGlobalService creates echo in every cluster and the client in globalCluster.
func (l *lab) createGlobalService(ctx context.Context) error {
	for _, name := range clusterNames() {
		if err := l.createEcho(ctx, l.clusters[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	url := fmt.Sprintf("http://%s:%d/", globalDNSName(), globalPort)
	ctr := l.sampleContainer(globalClientName, "send", "-url", url, "-interval", globalInterval.String(), "-timeout", "1s")
	if err := l.createSampleDeployment(ctx, l.clusters[globalCluster], sampleNamespace, globalClientName, 1, nil, nil, ctr); err != nil {
		return fmt.Errorf("%s: %w", globalCluster, err)
	}
	return nil
}

// createEcho creates a cluster's echo and its Service, labelled as a local-first global service.
func (l *lab) createEcho(ctx context.Context, c *testbed.Cluster) error {
	ctr := l.sampleContainer(globalName, "serve", "-listen", fmt.Sprintf(":%d", globalPort))
	ctr.Ports = []corev1.ContainerPort{{Name: globalPortName, ContainerPort: globalPort, Protocol: corev1.ProtocolTCP}}
	// Probed every second, so that a pod that comes back is an endpoint within a second.
	ctr.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(globalPortName)}},
		PeriodSeconds: 1,
	}
	if err := l.createSampleDeployment(ctx, c, sampleNamespace, globalName, globalReplicas, nil, nil, ctr); err != nil {
		return err
	}
	_, err := c.Client.CoreV1().Services(sampleNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: globalName,
			Labels: map[string]string{
				"app.kubernetes.io/name":    globalName,
				global.LabelGlobalService:   "true",
				global.LabelRoutingStrategy: global.LocalFirst,
			},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": globalName},
			Ports: []corev1.ServicePort{{
				Name: globalPortName, Port: globalPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(globalPortName),
			}},
		},
	}, metav1.CreateOptions{})
	return err
}

// localZones are the zones of cluster's nodes, sorted (none without nodes).
func (st *State) localZones(cluster string) []string {
	var zones []string
	if st.Nodes != nil {
		for _, n := range st.Nodes.Nodes {
			if n.Cluster == cluster && !slices.Contains(zones, n.Zone) {
				zones = append(zones, n.Zone)
			}
		}
	}
	slices.Sort(zones)
	return zones
}

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
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	ours := metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.ServiceMirror + "," + global.LabelName}
	svcs, err := client.CoreV1().Services(semaphoreNamespace).List(ctx, ours)
	if err != nil {
		return nil, err
	}
	epSlices, err := client.DiscoveryV1().EndpointSlices(semaphoreNamespace).List(ctx, ours)
	if err != nil {
		return nil, err
	}
	var out []GlobalServiceStatus
	for _, svc := range svcs.Items {
		s := GlobalServiceStatus{
			Name: svc.Name, ClusterIP: svc.Spec.ClusterIP, Slices: map[string]int{},
			DefinitionFrom: svc.Annotations[global.AnnotationDefinitionFrom],
		}
		s.Key, _ = global.KeyOf(svc.Labels)
		for _, p := range svc.Spec.Ports {
			s.Ports = append(s.Ports, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
		}
		for _, sl := range epSlices.Items {
			if sl.Labels[discoveryv1.LabelServiceName] != svc.Name {
				continue
			}
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
		out = append(out, s)
	}
	return out, nil
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
	svc, err := client.CoreV1().Services(sampleNamespace).Get(ctx, globalName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	epSlices, err := client.DiscoveryV1().EndpointSlices(sampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + globalName})
	if err != nil {
		return nil, err
	}
	s := GlobalSource{
		Global:     svc.Labels[global.LabelGlobalService] == "true",
		LocalFirst: svc.Labels[global.LabelRoutingStrategy] == global.LocalFirst,
		Slices:     len(epSlices.Items),
	}
	for _, p := range svc.Spec.Ports {
		s.Ports = append(s.Ports, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
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
func scrapeGlobalMetrics(ctx context.Context, st *State) map[string]globalMetrics {
	out := map[string]globalMetrics{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range st.Controllers {
		if c.Component != ownership.ServiceMirror {
			continue
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			samples, err := testbed.Scrape(sctx, http.DefaultClient, "http://"+c.Admin+"/metrics", "semaphore_service_mirror_global_")
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

func (g *globalStatus) collect(ctx context.Context, st *State) {
	var wg sync.WaitGroup
	wg.Go(func() { g.services = listInEveryCluster(ctx, st, listGlobalServices) })
	wg.Go(func() { g.sources = listInEveryCluster(ctx, st, listGlobalSource) })
	wg.Go(func() { g.metrics = scrapeGlobalMetrics(ctx, st) })
	var mu sync.Mutex
	for _, server := range st.DNS {
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			addrs, err := testbed.LookupHostInNetns(lctx, underlayNetns, server.Addr, globalDNSName())
			mu.Lock()
			defer mu.Unlock()
			g.dns = append(g.dns, DNSAnswer{Cluster: server.Cluster, Server: server.Addr, Name: globalDNSName(), Addrs: addrs, Err: err})
		})
	}
	wg.Wait()
	slices.SortFunc(g.dns, func(a, b DNSAnswer) int { return strings.Compare(a.Cluster, b.Cluster) })
}

// problems: echo's Service labelled global and local-first in every cluster; with nodes, the
// global Service in every cluster with echo's ports and exactly the addresses of every
// cluster's echo pods, all ready, the local ones hinted for the local zones and the others for
// none of them, the global name resolving to it, and the controllers counting the local zones
// and no conflict. Without nodes no controller runs: echo's Services must be there, with
// slices and no endpoint.
func (g *globalStatus) problems(st *State) []string {
	problems := append(g.sources.listProblems(st, "echo's Service"), g.services.listProblems(st, "global Services")...)
	name := global.ServiceName(globalKey)
	for _, c := range clusterNames() {
		if g.sources.errs[c] == nil {
			problems = append(problems, g.sourceProblems(st, c)...)
		}
		if st.nodesSkipped() || g.services.errs[c] != nil {
			continue
		}
		for _, got := range g.services.items[c] {
			if got.Name != name {
				problems = append(problems, fmt.Sprintf("%s: unexpected global Service %s/%s of %s", c, semaphoreNamespace, got.Name, got.Key))
			}
		}
		got, ok := g.services.findItem(c, func(s GlobalServiceStatus) bool { return s.Name == name })
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no global Service %s/%s of %s", c, semaphoreNamespace, name, globalKey))
			continue
		}
		problems = append(problems, globalServiceProblems(st, c, got)...)
		m := g.metrics[c]
		switch {
		case m.Err != nil:
			problems = append(problems, fmt.Sprintf("%s: service-mirror's metrics: %v", c, m.Err))
		case !m.Found:
			problems = append(problems, fmt.Sprintf("%s: service-mirror exports no semaphore_service_mirror_global_ gauges", c))
		case int(m.LocalZones) != len(st.localZones(c)):
			problems = append(problems, fmt.Sprintf("%s: service-mirror counts %v local zones, want %d (%s)", c, m.LocalZones, len(st.localZones(c)), strings.Join(st.localZones(c), ", ")))
		case m.Conflicts != 0:
			problems = append(problems, fmt.Sprintf("%s: service-mirror counts %v conflicts of global services, want none (every cluster defines echo alike)", c, m.Conflicts))
		}
	}
	if st.nodesSkipped() {
		return problems
	}
	for _, a := range g.dns {
		got, ok := g.services.findItem(a.Cluster, func(s GlobalServiceStatus) bool { return s.Name == name })
		switch {
		case !ok:
		case a.Err != nil:
			problems = append(problems, fmt.Sprintf("%s: CoreDNS: %s: %v", a.Cluster, a.Name, a.Err))
		case !slices.Equal(a.Addrs, []string{got.ClusterIP}):
			problems = append(problems, fmt.Sprintf("%s: CoreDNS answers %v for %s, want %s (the ClusterIP of %s)", a.Cluster, a.Addrs, a.Name, got.ClusterIP, name))
		}
	}
	return problems
}

// sourceProblems: echo's Service in cluster c, labelled, with its ports; without nodes, with
// its (empty) slices.
func (g *globalStatus) sourceProblems(st *State, c string) []string {
	src, ok := g.sources.findItem(c, func(GlobalSource) bool { return true })
	switch {
	case !ok:
		return []string{fmt.Sprintf("%s: no Service %s/%s", c, sampleNamespace, globalName)}
	case !src.Global || !src.LocalFirst:
		return []string{fmt.Sprintf("%s: Service %s/%s is not labelled %s=true and %s=%s", c, sampleNamespace, globalName, global.LabelGlobalService, global.LabelRoutingStrategy, global.LocalFirst)}
	case !slices.Equal(src.Ports, globalPorts):
		return []string{fmt.Sprintf("%s: Service %s/%s has ports %v, want %v", c, sampleNamespace, globalName, src.Ports, globalPorts)}
	case st.nodesSkipped() && src.Slices == 0:
		return []string{fmt.Sprintf("%s: Service %s/%s has no EndpointSlice yet", c, sampleNamespace, globalName)}
	case st.nodesSkipped() && src.Endpoints > 0:
		return []string{fmt.Sprintf("%s: Service %s/%s has %d endpoints without nodes", c, sampleNamespace, globalName, src.Endpoints)}
	}
	return nil
}

// globalServiceProblems compares cluster c's global Service with what every cluster's echo
// pods and c's zones make it.
func globalServiceProblems(st *State, c string, got GlobalServiceStatus) []string {
	var problems []string
	if got.Key != globalKey {
		problems = append(problems, fmt.Sprintf("%s: global Service %s has labels of %s, want %s", c, got.Name, got.Key, globalKey))
	}
	if !slices.Equal(got.Ports, globalPorts) {
		problems = append(problems, fmt.Sprintf("%s: global Service %s has ports %v, want %v", c, got.Name, got.Ports, globalPorts))
	}
	for _, from := range clusterNames() {
		addrs, notReady := got.endpointsOf(from)
		slices.Sort(addrs)
		switch want := st.podIPs(from, globalName); {
		case got.Slices[from] == 0:
			problems = append(problems, fmt.Sprintf("%s: global Service %s has no EndpointSlice of %s", c, got.Name, from))
		case !slices.Equal(addrs, want):
			problems = append(problems, fmt.Sprintf("%s: global Service %s has endpoints %v of %s, want %v (its echo pods)", c, got.Name, addrs, from, want))
		case notReady > 0:
			problems = append(problems, fmt.Sprintf("%s: global Service %s has %d endpoints of %s not ready", c, got.Name, notReady, from))
		}
	}
	local := st.localZones(c)
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

func (g *globalStatus) print(w io.Writer, st *State) {
	section(w, fmt.Sprintf("Global services (semaphore-service-mirror: %s/%s in every cluster, labelled %s=true and %s=%s)",
		sampleNamespace, globalName, global.LabelGlobalService, global.LabelRoutingStrategy, global.LocalFirst))
	g.services.printRows(w, st, func(c string, s GlobalServiceStatus) string {
		var b strings.Builder
		fmt.Fprintf(&b, "  %s\t%s\t%s\t%s\tdefinition of %s\n", c, s.Name, s.ClusterIP, strings.Join(s.Ports, ","), cmp.Or(s.DefinitionFrom, "?"))
		for _, from := range clusterNames() {
			fmt.Fprintf(&b, "  \t  from %s\t%d slices\t%s\n", from, s.Slices[from], endpointsLine(s.Endpoints, from))
		}
		return b.String()
	})
	tw := table(w)
	for _, c := range clusterNames() {
		line := fmt.Sprintf("  %s\t%s/%s", c, sampleNamespace, globalName)
		if src, ok := g.sources.findItem(c, func(GlobalSource) bool { return true }); ok {
			line += fmt.Sprintf("\t%s\tglobal %v, local-first %v\t%d slices, %d endpoints", strings.Join(src.Ports, ","), src.Global, src.LocalFirst, src.Slices, src.Endpoints)
		} else if err := g.sources.errs[c]; err != nil {
			line += "\terror: " + err.Error()
		} else {
			line += "\tmissing"
		}
		line += "\tlocal zones " + cmp.Or(strings.Join(st.localZones(c), ", "), "none")
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
	if st.nodesSkipped() {
		fmt.Fprintf(w, "  without nodes no service-mirror runs: echo's Services only, with empty slices\n")
		return
	}
	if c := st.podsOf(globalCluster, globalClientName); len(c) > 0 {
		fmt.Fprintf(w, "  %s/%s sends to http://%s:%d/ every %s; what it got: tail -f %s\n", globalCluster, globalClientName, globalDNSName(), globalPort, globalInterval, c[0].Log)
		fmt.Fprintf(w, "  fail over: kubectl --kubeconfig %s --context %s -n %s scale deployment %s --replicas 0\n", st.Kubeconfig, globalCluster, sampleNamespace, globalName)
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
