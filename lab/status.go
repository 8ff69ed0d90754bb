package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// Status is what the lab looks like right now, read from the clusters, CoreDNS and the
// controllers' admin servers.
type Status struct {
	Mirrors     map[string][]MirrorStatus // by cluster
	MirrorErrs  map[string]error          // by cluster: the cluster could not be read
	NetSets     map[string][]NetSetStatus // by cluster
	NetSetErrs  map[string]error          // by cluster: the cluster could not be read
	DNS         []DNSAnswer
	Controllers []ControllerStatus
	Prometheus  *PromStatus // nil when Prometheus does not run
	WireGuard   []NodeWireGuard
	Traffic     *TrafficLog // nil without nodes
}

// MirrorStatus is one mirror Service.
type MirrorStatus struct {
	Name      string
	Source    mirror.Source
	ClusterIP string
	Ports     []string
	Ready     []string // addresses of the ready endpoints
	NotReady  int
}

// DNSAnswer is the answer of one CoreDNS to one name.
type DNSAnswer struct {
	Cluster, Server, Name string
	Addrs                 []string
	Err                   error
}

// ControllerStatus is one controller's readiness.
type ControllerStatus struct {
	ControllerState
	Ready  bool
	Detail string // the failing checks of /readyz, or the error reaching it
	// Leader tells whether the pod holds its Lease (with Lease set).
	Leader bool
}

// collect reads the status of the lab described by st.
func collect(ctx context.Context, st *State) *Status {
	s := &Status{
		Mirrors: map[string][]MirrorStatus{}, MirrorErrs: map[string]error{},
		NetSets: map[string][]NetSetStatus{}, NetSetErrs: map[string]error{},
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range st.Clusters {
		wg.Go(func() {
			mirrors, err := listMirrors(ctx, c.DirectKubeconfig)
			mu.Lock()
			defer mu.Unlock()
			s.Mirrors[c.Name], s.MirrorErrs[c.Name] = mirrors, err
		})
		wg.Go(func() {
			sets, err := listNetworkSets(ctx, c.DirectKubeconfig)
			mu.Lock()
			defer mu.Unlock()
			s.NetSets[c.Name], s.NetSetErrs[c.Name] = sets, err
		})
	}
	names := dnsNames(st)
	for _, d := range st.DNS {
		for _, m := range names[d.Cluster] {
			wg.Go(func() {
				lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				addrs, err := testbed.LookupHostInNetns(lctx, underlayNetns, d.Addr, m.DNSName())
				mu.Lock()
				defer mu.Unlock()
				s.DNS = append(s.DNS, DNSAnswer{Cluster: d.Cluster, Server: d.Addr, Name: m.DNSName(), Addrs: addrs, Err: err})
			})
		}
	}
	s.Controllers = make([]ControllerStatus, len(st.Controllers))
	for i, c := range st.Controllers {
		wg.Go(func() { s.Controllers[i] = readiness(ctx, c) })
	}
	// Each Lease once, however many replicas compete for it.
	var leases [][2]string // cluster, lease
	for _, c := range st.Controllers {
		if key := [2]string{c.Cluster, c.Lease}; c.Lease != "" && !slices.Contains(leases, key) {
			leases = append(leases, key)
		}
	}
	holders := map[[2]string]string{}
	for _, key := range leases {
		wg.Go(func() {
			h := leaseHolder(ctx, st, key[0], key[1])
			mu.Lock()
			defer mu.Unlock()
			holders[key] = h
		})
	}
	if st.Prometheus != nil {
		wg.Go(func() { s.Prometheus = collectPrometheus(ctx, st.Prometheus) })
	}
	wg.Go(func() { s.WireGuard = collectWireGuard(ctx, st) })
	wg.Go(func() { s.Traffic = collectTraffic(st) })
	wg.Wait()
	for i, c := range st.Controllers {
		s.Controllers[i].Leader = c.Lease != "" && holders[[2]string{c.Cluster, c.Lease}] == c.PodName
	}
	slices.SortFunc(s.DNS, func(a, b DNSAnswer) int { return strings.Compare(a.Cluster+a.Name, b.Cluster+b.Name) })
	return s
}

// listMirrors lists the service mirror's Services and EndpointSlices in a cluster.
func listMirrors(ctx context.Context, kubeconfig string) ([]MirrorStatus, error) {
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	managed := metav1.ListOptions{LabelSelector: labels.ManagedBy + "=" + labels.ServiceMirror}
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

// clientConfig is the client configuration of kubeconfig, for the short reads of collect.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	return cfg, nil
}

// readiness asks a controller's /readyz.
func readiness(ctx context.Context, c ControllerState) ControllerStatus {
	s := ControllerStatus{ControllerState: c}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Admin+"/readyz", nil)
	if err != nil {
		s.Detail = err.Error()
		return s
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.Detail = err.Error()
		return s
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	s.Ready = resp.StatusCode == http.StatusOK
	if !s.Ready {
		var failed []string
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "[-]") {
				failed = append(failed, strings.TrimPrefix(line, "[-]"))
			}
		}
		s.Detail = fmt.Sprintf("/readyz %d: %s", resp.StatusCode, strings.Join(failed, "; "))
	}
	return s
}

// findProblems compares the status with what the lab must show: fluentd's mirror with its
// endpoints in every other cluster, the DNS name resolving to the mirror's ClusterIP, the
// forwarders' network set with exactly their nets in every other cluster, and every controller
// running in every cluster and ready.
func findProblems(st *State, s *Status) []string {
	var problems []string
	for _, c := range st.Clusters {
		if err := s.MirrorErrs[c.Name]; err != nil {
			problems = append(problems, fmt.Sprintf("%s: listing mirrors: %v", c.Name, err))
		}
	}
	if st.Nodes != nil && st.Nodes.Skipped != "" {
		// No node, no pod: the clusters and the releases are all there is to check.
		return problems
	}
	for _, want := range expectedMirrors(st) {
		if s.MirrorErrs[want.Cluster] != nil {
			continue
		}
		got, ok := findMirror(s, want.Cluster, want.Name())
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no mirror %s/%s of %s", want.Cluster, semaphoreNamespace, want.Name(), want.Source))
		case !slices.Equal(got.Ready, want.Endpoints):
			problems = append(problems, fmt.Sprintf("%s: mirror %s has ready endpoints %v, want %v", want.Cluster, want.Name(), got.Ready, want.Endpoints))
		}
	}
	for _, c := range st.Clusters {
		if err := s.NetSetErrs[c.Name]; err != nil {
			problems = append(problems, fmt.Sprintf("%s: listing GlobalNetworkSets: %v", c.Name, err))
		}
	}
	for _, want := range expectedSets(st) {
		if s.NetSetErrs[want.Cluster] != nil {
			continue
		}
		got, ok := findNetSet(s, want.Cluster, want.Name())
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no GlobalNetworkSet %s of %s", want.Cluster, want.Name(), want.Source))
		case got.Source != want.Source:
			problems = append(problems, fmt.Sprintf("%s: GlobalNetworkSet %s has source labels %s, want %s", want.Cluster, want.Name(), got.Source, want.Source))
		case !slices.Equal(got.Nets, want.Nets):
			problems = append(problems, fmt.Sprintf("%s: GlobalNetworkSet %s has nets %v, want %v", want.Cluster, want.Name(), got.Nets, want.Nets))
		}
	}
	// Nothing else is mirrored or turned into a set: no cluster mirrors its own Services, and
	// no set holds its own cluster's pods.
	for cluster, mirrors := range s.Mirrors {
		for _, m := range mirrors {
			if !slices.ContainsFunc(expectedMirrors(st), func(e expectedMirror) bool { return e.Cluster == cluster && e.Name() == m.Name }) {
				problems = append(problems, fmt.Sprintf("%s: unexpected mirror %s/%s", cluster, semaphoreNamespace, m.Name))
			}
		}
	}
	for cluster, sets := range s.NetSets {
		for _, n := range sets {
			if !slices.ContainsFunc(expectedSets(st), func(e expectedSet) bool { return e.Cluster == cluster && e.Name() == n.Name }) {
				problems = append(problems, fmt.Sprintf("%s: unexpected GlobalNetworkSet %s", cluster, n.Name))
			}
		}
	}
	for _, d := range st.DNS {
		for _, want := range dnsNames(st)[d.Cluster] {
			m, ok := findMirror(s, d.Cluster, want.Name())
			if !ok {
				continue // reported above
			}
			a, _ := findAnswer(s, d.Cluster, want.DNSName())
			switch {
			case a.Err != nil:
				problems = append(problems, fmt.Sprintf("%s: CoreDNS: %s: %v", d.Cluster, want.DNSName(), a.Err))
			case !slices.Equal(a.Addrs, []string{m.ClusterIP}):
				problems = append(problems, fmt.Sprintf("%s: CoreDNS answers %v for %s, want %s (the ClusterIP of %s)", d.Cluster, a.Addrs, want.DNSName(), m.ClusterIP, want.Name()))
			}
		}
	}
	for _, component := range []string{labels.ServiceMirror, labels.Policy} {
		for _, cluster := range clusterNames() {
			if !slices.ContainsFunc(st.Controllers, func(c ControllerState) bool {
				return c.Component == component && c.Cluster == cluster
			}) {
				problems = append(problems, fmt.Sprintf("%s does not run in %s", component, cluster))
			}
		}
	}
	leaders := map[string]int{}
	for _, c := range s.Controllers {
		if !c.Ready {
			problems = append(problems, fmt.Sprintf("%s %s is not ready: %s", c.Component, c.where(), c.Detail))
		}
		if c.Lease != "" && c.Leader {
			leaders[c.Component+" in "+c.Cluster]++
		}
	}
	for _, c := range s.Controllers {
		if c.Lease != "" && leaders[c.Component+" in "+c.Cluster] != 1 {
			problems = append(problems, fmt.Sprintf("%s in %s has %d leaders, want 1", c.Component, c.Cluster, leaders[c.Component+" in "+c.Cluster]))
			leaders[c.Component+" in "+c.Cluster] = 1 // once
		}
	}
	problems = append(problems, wireguardProblems(st, s)...)
	problems = append(problems, trafficProblems(s)...)
	return append(problems, prometheusProblems(st, s.Prometheus)...)
}

func findMirror(s *Status, cluster, name string) (MirrorStatus, bool) {
	for _, m := range s.Mirrors[cluster] {
		if m.Name == name {
			return m, true
		}
	}
	return MirrorStatus{}, false
}

func findNetSet(s *Status, cluster, name string) (NetSetStatus, bool) {
	for _, n := range s.NetSets[cluster] {
		if n.Name == name {
			return n, true
		}
	}
	return NetSetStatus{}, false
}

func findAnswer(s *Status, cluster, name string) (DNSAnswer, bool) {
	for _, a := range s.DNS {
		if a.Cluster == cluster && a.Name == name {
			return a, true
		}
	}
	return DNSAnswer{Err: fmt.Errorf("not asked")}, false
}

// waitReady polls the status until it shows no problem, a child exits, or timeout passes.
func waitReady(ctx context.Context, st *State, timeout time.Duration, exited <-chan *child) (*Status, []string) {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s := collect(cctx, st)
		cancel()
		problems := findProblems(st, s)
		if len(problems) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return s, problems
		}
		select {
		case <-ctx.Done():
		case c := <-exited:
			return s, append(problems, fmt.Sprintf("%s exited (%v); see %s", c.name, c.err, c.log))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// printStatus prints what a user of the lab wants to see and how to poke at it.
func printStatus(w io.Writer, st *State, s *Status) {
	up := time.Since(st.Started).Round(time.Second)
	fmt.Fprintf(w, "Semaphore lab: %s for %s (pid %d, directory %s)\n", st.Phase, up, st.PID, st.Dir)

	section(w, fmt.Sprintf("Clusters (kubectl --kubeconfig %s --context <cluster>)", st.Kubeconfig))
	tw := table(w)
	for _, c := range st.Clusters {
		fmt.Fprintf(tw, "  %s\t%s\tservices %s\n", c.Name, c.Server, c.ServiceCIDR)
	}
	tw.Flush()
	if st.Registry != "" {
		fmt.Fprintf(w, "  registry %s: images %s/..., charts oci://%s/%s/...\n", st.Registry, imagesRepo, st.Registry, chartsRepo)
	}

	section(w, fmt.Sprintf("Mirrored Services (semaphore-service-mirror, namespace %s)", semaphoreNamespace))
	tw = table(w)
	for _, c := range st.Clusters {
		if err := s.MirrorErrs[c.Name]; err != nil {
			fmt.Fprintf(tw, "  %s\terror: %v\n", c.Name, err)
			continue
		}
		if len(s.Mirrors[c.Name]) == 0 {
			fmt.Fprintf(tw, "  %s\t(none)\n", c.Name)
		}
		for _, m := range s.Mirrors[c.Name] {
			eps := fmt.Sprintf("%d ready", len(m.Ready))
			if len(m.Ready) > 0 {
				eps += ": " + strings.Join(m.Ready, ", ")
			}
			if m.NotReady > 0 {
				eps += fmt.Sprintf(" (+%d not ready)", m.NotReady)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\tof %s\n", c.Name, m.Name, m.ClusterIP, strings.Join(m.Ports, ","), eps, m.Source)
		}
	}
	tw.Flush()

	section(w, fmt.Sprintf("Network sets (semaphore-policy, GlobalNetworkSets %s)", calicoAPI))
	tw = table(w)
	for _, c := range st.Clusters {
		if err := s.NetSetErrs[c.Name]; err != nil {
			fmt.Fprintf(tw, "  %s\terror: %v\n", c.Name, err)
			continue
		}
		if len(s.NetSets[c.Name]) == 0 {
			fmt.Fprintf(tw, "  %s\t(none)\n", c.Name)
		}
		for _, n := range s.NetSets[c.Name] {
			src := "of " + n.Source.String()
			if !n.SourceOK {
				src = "(source labels missing)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, n.Name, strings.Join(n.Nets, ", "), src)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "  a CRD stands in for the Calico API server, and no Calico enforces anything here;\n")
	fmt.Fprintf(w, "  docs/policy.md shows the Calico NetworkPolicy that selects a set by its labels\n")

	for _, d := range st.DNS {
		if len(dnsNames(st)[d.Cluster]) == 0 {
			continue
		}
		section(w, fmt.Sprintf("DNS (CoreDNS of %s, pod %s at %s, with the Corefile of docs/coredns.md)", d.Cluster, d.Pod, d.Addr))
		tw = table(w)
		for _, a := range s.DNS {
			if a.Cluster != d.Cluster {
				continue
			}
			answer := strings.Join(a.Addrs, ", ")
			if a.Err != nil {
				answer = "error: " + a.Err.Error()
			}
			for _, want := range dnsNames(st)[d.Cluster] {
				if m, ok := findMirror(s, d.Cluster, want.Name()); ok && want.DNSName() == a.Name && slices.Equal(a.Addrs, []string{m.ClusterIP}) {
					answer += fmt.Sprintf("\t(the ClusterIP of %s/%s)", semaphoreNamespace, m.Name)
				}
			}
			fmt.Fprintf(tw, "  %s\t-> %s\n", a.Name, answer)
		}
		tw.Flush()
		host, _, _ := net.SplitHostPort(d.Addr)
		fmt.Fprintf(w, "  try: ip netns exec %s dig @%s +short %s\n", underlayNetns, host, dnsNames(st)[d.Cluster][0].DNSName())
	}

	printWireGuard(w, st, s)
	printTraffic(w, st, s)

	section(w, "Controllers")
	tw = table(w)
	for _, c := range s.Controllers {
		ready := "ready"
		if !c.Ready {
			ready = "NOT READY (" + c.Detail + ")"
		}
		// A DaemonSet's controller is one per node: the node's name says its cluster too.
		where := c.Cluster
		if c.Node != "" {
			where = c.Node
		}
		if c.Lease != "" {
			if c.Leader {
				ready += ", leader"
			} else {
				ready += ", standby"
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\thttp://%s/metrics\tlog %s\n", c.Component, where, c.PodName, ready, c.Admin, c.Log)
	}
	tw.Flush()

	printPrometheus(w, st, s.Prometheus)

	section(w, "Poke at it")
	kubectl := func(cluster string) string {
		return fmt.Sprintf("kubectl --kubeconfig %s --context %s", st.Kubeconfig, cluster)
	}
	fmt.Fprintf(w, "  %s get pods -A -o wide\n", kubectl("gcp"))
	fmt.Fprintf(w, "  %s get svc,endpointslices -n %s\n", kubectl("gcp"), semaphoreNamespace)
	fmt.Fprintf(w, "  %s get svc,endpointslices -n %s\n", kubectl(fluentdCluster), sampleNamespace)
	fmt.Fprintf(w, "  %s get globalnetworksets.projectcalico.org -o yaml\n", kubectl(remotesOf(forwarderCluster)[0]))
	fmt.Fprintf(w, "  # stop mirroring fluentd, and watch its mirrors go (and the forwarders' requests fail):\n")
	fmt.Fprintf(w, "  %s -n %s label svc %s %s-\n", kubectl(fluentdCluster), sampleNamespace, fluentdName, mirrorLabel)
	fmt.Fprintf(w, "  # scale the forwarders down to one, and watch the network sets shrink:\n")
	fmt.Fprintf(w, "  %s -n %s scale deployment %s --replicas 1\n", kubectl(forwarderCluster), sampleNamespace, forwarderName)
	if i := slices.IndexFunc(st.Pods, func(p PodState) bool { return p.App == fluentdName }); i >= 0 {
		fmt.Fprintf(w, "  # what fluentd logs (the kubelet's file; kubectl logs needs the API server to reach the kubelet, which it cannot here):\n")
		fmt.Fprintf(w, "  tail -f %s\n", st.Pods[i].Log)
	}
	if st.Nodes != nil && len(st.Nodes.Nodes) > 0 {
		n := st.Nodes.Nodes[0]
		fmt.Fprintf(w, "  # a node's routes to the other clusters' pods, through its WireGuard devices, and kube-proxy's rules:\n")
		fmt.Fprintf(w, "  ip -n %s route; ip -n %s -s link show %s; ip netns exec %s iptables -t nat -S KUBE-SERVICES\n",
			n.Netns, n.Netns, peers.DeviceName(remotesOf(n.Cluster)[0]), n.Netns)
	}

	section(w, "Charts (helm install from the lab's registry, as the README tells users)")
	fmt.Fprintf(w, "  helm --kubeconfig %s --kube-context <cluster> list -A\n", st.Kubeconfig)
	fmt.Fprintf(w, "  %s/%s in every cluster: its values, and its NOTES followed for each consumer, in %s\n", remoteNamespace, remoteRelease,
		filepath.Join(st.Dir, "clusters", "<cluster>", "semaphore-remote-{values.yaml,NOTES.txt}"))
	fmt.Fprintf(w, "  %s/%s (umbrella) in every cluster: its values and manifest in %s\n", semaphoreNamespace, umbrellaRelease,
		filepath.Join(st.Dir, "clusters", "<cluster>", "semaphore-{values,manifest}.yaml"))
	fmt.Fprintln(w)
}

// where is where a controller runs: in a cluster, or on a node of one.
func (c ControllerState) where() string {
	if c.Node != "" {
		return "on " + c.Node
	}
	if c.PodName != "" {
		return "in " + c.Cluster + " (" + c.PodName + ")"
	}
	return "in " + c.Cluster
}

// printProblems lists what is wrong, if anything.
func printProblems(w io.Writer, problems []string) {
	if len(problems) == 0 {
		return
	}
	fmt.Fprintln(w, "PROBLEMS")
	for _, p := range problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	fmt.Fprintln(w)
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// leaseHolder is the holder of Lease lease in cluster's semaphore namespace ("" when it cannot
// be read).
func leaseHolder(ctx context.Context, st *State, cluster, lease string) string {
	i := slices.IndexFunc(st.Clusters, func(cl ClusterState) bool { return cl.Name == cluster })
	if i < 0 {
		return ""
	}
	client, err := clientsetOf(st.Clusters[i].DirectKubeconfig)
	if err != nil {
		return ""
	}
	l, err := client.CoordinationV1().Leases(semaphoreNamespace).Get(ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
