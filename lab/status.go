package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// statusPart is what the status shows of one part of the lab: collect reads it from the
// running lab described by the state, problems compares it with what the lab must show, and
// print prints its section. A part that shows something adds itself to newStatus, and
// nothing else needs to know of it.
type statusPart interface {
	collect(ctx context.Context, st *State)
	problems(st *State) []string
	print(w io.Writer, st *State)
}

// Status is what the lab looks like right now, read from the clusters, CoreDNS, the nodes,
// Prometheus and the controllers' admin servers: the status of each of its parts.
type Status struct {
	parts []statusPart
}

// newStatus is the status of every part, not read yet, in the order they print.
func newStatus() *Status {
	mirrors := &mirrorsStatus{}
	return &Status{parts: []statusPart{
		clustersStatus{},
		mirrors,
		&netSetsStatus{},
		&dnsStatus{mirrors: mirrors},
		&wireguardStatus{},
		&trafficStatus{},
		&globalStatus{},
		&controllersStatus{},
		&prometheusStatus{},
		&hostileStatus{},
		hints{},
		chartsStatus{},
	}}
}

// collect reads the status of the lab described by st, every part at once.
func collect(ctx context.Context, st *State) *Status {
	s := newStatus()
	var wg sync.WaitGroup
	for _, p := range s.parts {
		wg.Go(func() { p.collect(ctx, st) })
	}
	wg.Wait()
	return s
}

// findProblems compares the status with what the lab must show: every part's problems.
func findProblems(st *State, s *Status) []string {
	var problems []string
	for _, p := range s.parts {
		problems = append(problems, p.problems(st)...)
	}
	return problems
}

// printStatus prints what a user of the lab wants to see and how to poke at it.
func printStatus(w io.Writer, st *State, s *Status) {
	up := time.Since(st.Started).Round(time.Second)
	fmt.Fprintf(w, "Semaphore lab: %s for %s (pid %d, directory %s)\n", st.Phase, up, st.PID, st.Dir)
	for _, p := range s.parts {
		p.print(w, st)
	}
	fmt.Fprintln(w)
}

// nodesSkipped tells whether the lab runs without nodes, and so without pods: then the clusters
// and the releases are all there is to check.
func (st *State) nodesSkipped() bool {
	return st.Nodes != nil && st.Nodes.Skipped != ""
}

// printOnly is embedded by the parts of the status that print from the state alone, with
// nothing to read or check.
type printOnly struct{}

func (printOnly) collect(context.Context, *State) {}
func (printOnly) problems(*State) []string        { return nil }

// perCluster is a list read from every cluster, or why a cluster could not be read.
type perCluster[T any] struct {
	items map[string][]T
	errs  map[string]error
}

// listInEveryCluster reads list from every cluster of st at once.
func listInEveryCluster[T any](ctx context.Context, st *State, list func(ctx context.Context, kubeconfig string) ([]T, error)) perCluster[T] {
	out := perCluster[T]{items: map[string][]T{}, errs: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range st.Clusters {
		wg.Go(func() {
			items, err := list(ctx, c.DirectKubeconfig)
			mu.Lock()
			defer mu.Unlock()
			out.items[c.Name], out.errs[c.Name] = items, err
		})
	}
	wg.Wait()
	return out
}

// findItem is the first item of cluster that match accepts.
func (p perCluster[T]) findItem(cluster string, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(p.items[cluster], match); i >= 0 {
		return p.items[cluster][i], true
	}
	var zero T
	return zero, false
}

// listProblems are the clusters whose what could not be listed.
func (p perCluster[T]) listProblems(st *State, what string) []string {
	var problems []string
	for _, c := range st.Clusters {
		if err := p.errs[c.Name]; err != nil {
			problems = append(problems, fmt.Sprintf("%s: listing %s: %v", c.Name, what, err))
		}
	}
	return problems
}

// printRows prints a table of every cluster's items, one row each (row ends with a newline),
// "(none)" for a cluster without any, or the error reading it.
func (p perCluster[T]) printRows(w io.Writer, st *State, row func(cluster string, item T) string) {
	tw := table(w)
	for _, c := range st.Clusters {
		if err := p.errs[c.Name]; err != nil {
			fmt.Fprintf(tw, "  %s\terror: %v\n", c.Name, err)
			continue
		}
		if len(p.items[c.Name]) == 0 {
			fmt.Fprintf(tw, "  %s\t(none)\n", c.Name)
		}
		for _, item := range p.items[c.Name] {
			fmt.Fprint(tw, row(c.Name, item))
		}
	}
	tw.Flush()
}

// hints are the commands that show the lab at work, and change it.
type hints struct{ printOnly }

func (hints) print(w io.Writer, st *State) {
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
		p := st.Pods[i]
		fmt.Fprintf(w, "  # what fluentd logs (the API server reaches the kubelet through the egress proxy), or the kubelet's file itself:\n")
		fmt.Fprintf(w, "  %s -n %s logs -f %s\n", kubectl(p.Cluster), p.Namespace, p.Name)
		fmt.Fprintf(w, "  tail -f %s\n", p.Log)
	}
	if st.Nodes != nil && len(st.Nodes.Nodes) > 0 {
		n := st.Nodes.Nodes[0]
		fmt.Fprintf(w, "  # a node's routes to the other clusters' pods, through its WireGuard devices, and kube-proxy's rules:\n")
		fmt.Fprintf(w, "  ip -n %s route; ip -n %s -s link show %s; ip netns exec %s iptables -t nat -S KUBE-SERVICES\n",
			n.Netns, n.Netns, peers.DeviceName(remotesOf(n.Cluster)[0]), n.Netns)
	}
}

// chartsStatus says where the lab's releases and their values are.
type chartsStatus struct{ printOnly }

func (chartsStatus) print(w io.Writer, st *State) {
	section(w, "Charts (helm install from the lab's registry, as the README tells users)")
	fmt.Fprintf(w, "  helm --kubeconfig %s --kube-context <cluster> list -A\n", st.Kubeconfig)
	fmt.Fprintf(w, "  %s/%s in every cluster: its values, and its NOTES followed for each consumer, in %s\n", remoteNamespace, remoteRelease,
		filepath.Join(st.Dir, "clusters", "<cluster>", "semaphore-remote-{values.yaml,NOTES.txt}"))
	fmt.Fprintf(w, "  %s/%s (umbrella) in every cluster: its values and manifest in %s\n", semaphoreNamespace, umbrellaRelease,
		filepath.Join(st.Dir, "clusters", "<cluster>", "semaphore-{values,manifest}.yaml"))
}

// clustersStatus lists the clusters and the registry.
type clustersStatus struct{ printOnly }

func (clustersStatus) print(w io.Writer, st *State) {
	section(w, fmt.Sprintf("Clusters (kubectl --kubeconfig %s --context <cluster>)", st.Kubeconfig))
	tw := table(w)
	for _, c := range st.Clusters {
		fmt.Fprintf(tw, "  %s\t%s\tservices %s\n", c.Name, c.Server, c.ServiceCIDR)
	}
	tw.Flush()
	if st.Registry != "" {
		fmt.Fprintf(w, "  registry %s: images %s/..., charts oci://%s/%s/...\n", st.Registry, imagesRepo, st.Registry, chartsRepo)
	}
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

// status prints the status of the lab running in dir.
func status(ctx context.Context, dir string) int {
	pid, st, ok, err := running(dir)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	case !ok && pid == 0 && st == nil:
		fmt.Printf("No lab is running in %s. Start one with `make lab` (bash ci/lab).\n", dir)
		return 1
	case !ok:
		fmt.Printf("The lab (pid %d) in %s is not running any more; `make lab-down` (bash ci/lab down) cleans up after it.\n", pid, dir)
		return 1
	case st == nil || st.Phase == phaseStarting:
		fmt.Printf("The lab (pid %d) in %s is still starting.\n", pid, dir)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := collect(ctx, st)
	printStatus(os.Stdout, st, s)
	problems := findProblems(st, s)
	printProblems(os.Stdout, problems)
	if st.Phase != phaseUp || len(problems) > 0 {
		return 1
	}
	return 0
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
