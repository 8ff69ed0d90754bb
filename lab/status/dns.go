package status

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// dnsNames are the names each cluster's CoreDNS must resolve, by cluster: the mirrors there.
func dnsNames(rec *layout.Record) map[string][]expectedMirror {
	out := map[string][]expectedMirror{}
	for _, m := range expectedMirrors(rec) {
		out[m.Cluster] = append(out[m.Cluster], m)
	}
	return out
}

// DNSAnswer is the answer of one CoreDNS to one name.
type DNSAnswer struct {
	Cluster, Server, Name string
	Addrs                 []string
	Err                   error
}

// lookup asks server, from its cluster's provider network, for name.
func lookup(ctx context.Context, server layout.DNSServer, name string) DNSAnswer {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := testbed.LookupHostInNetns(ctx, layout.VPCNetns(server.Cluster), server.Addr, name)
	return DNSAnswer{Cluster: server.Cluster, Server: server.Addr, Name: name, Addrs: addrs, Err: err}
}

// lookupAll asks every server for each of its names, all at once.
func lookupAll(ctx context.Context, servers []layout.DNSServer, names func(layout.DNSServer) []string) []DNSAnswer {
	var out []DNSAnswer
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, server := range servers {
		for _, name := range names(server) {
			wg.Go(func() {
				a := lookup(ctx, server, name)
				mu.Lock()
				defer mu.Unlock()
				out = append(out, a)
			})
		}
	}
	wg.Wait()
	return out
}

// problems: a is exactly clusterIP, the ClusterIP of service.
func (a DNSAnswer) problems(clusterIP, service string) []string {
	switch {
	case a.Err != nil:
		return []string{fmt.Sprintf("%s: CoreDNS: %s: %v", a.Cluster, a.Name, a.Err)}
	case !slices.Equal(a.Addrs, []string{clusterIP}):
		return []string{fmt.Sprintf("%s: CoreDNS answers %v for %s, want %s (the ClusterIP of %s)", a.Cluster, a.Addrs, a.Name, clusterIP, service)}
	}
	return nil
}

// dnsStatus is what every cluster's CoreDNS answers for the names it must resolve: the
// mirrors there, read by the mirrors' status.
type dnsStatus struct {
	mirrors *mirrorsStatus
	answers []DNSAnswer // sorted by cluster and name
}

func (d *dnsStatus) collect(ctx context.Context, rec *layout.Record) {
	names := dnsNames(rec)
	d.answers = lookupAll(ctx, rec.DNS, func(server layout.DNSServer) []string {
		var out []string
		for _, m := range names[server.Cluster] {
			out = append(out, m.DNSName())
		}
		return out
	})
	slices.SortFunc(d.answers, func(a, b DNSAnswer) int { return strings.Compare(a.Cluster+a.Name, b.Cluster+b.Name) })
}

// answer is the answer of cluster's CoreDNS for name.
func (d *dnsStatus) answer(cluster, name string) DNSAnswer {
	if i := slices.IndexFunc(d.answers, func(a DNSAnswer) bool { return a.Cluster == cluster && a.Name == name }); i >= 0 {
		return d.answers[i]
	}
	return DNSAnswer{Cluster: cluster, Name: name, Err: fmt.Errorf("not asked")}
}

// problems: every name resolves to the ClusterIP of its mirror (a missing mirror is the
// mirrors' problem).
func (d *dnsStatus) problems(rec *layout.Record) []string {
	if rec.NodesSkipped() {
		return nil
	}
	var problems []string
	for _, server := range rec.DNS {
		for _, want := range dnsNames(rec)[server.Cluster] {
			m, ok := d.mirrors.find(server.Cluster, want.Name())
			if !ok {
				continue
			}
			problems = append(problems, d.answer(server.Cluster, want.DNSName()).problems(m.ClusterIP, want.Name())...)
		}
	}
	return problems
}

// print prints a section for every cluster whose CoreDNS has names to resolve.
func (d *dnsStatus) print(w io.Writer, rec *layout.Record) {
	for _, server := range rec.DNS {
		names := dnsNames(rec)[server.Cluster]
		if len(names) == 0 {
			continue
		}
		section(w, fmt.Sprintf("DNS (CoreDNS of %s, pod %s at %s, with the Corefile of docs/coredns.md)", server.Cluster, server.Pod, server.Addr))
		tw := table(w)
		for _, a := range d.answers {
			if a.Cluster != server.Cluster {
				continue
			}
			answer := strings.Join(a.Addrs, ", ")
			if a.Err != nil {
				answer = "error: " + a.Err.Error()
			}
			for _, want := range names {
				if m, ok := d.mirrors.find(server.Cluster, want.Name()); ok && want.DNSName() == a.Name && slices.Equal(a.Addrs, []string{m.ClusterIP}) {
					answer += fmt.Sprintf("\t(the ClusterIP of %s/%s)", layout.SemaphoreNamespace, m.Name)
				}
			}
			fmt.Fprintf(tw, "  %s\t-> %s\n", a.Name, answer)
		}
		tw.Flush()
		host, _, _ := net.SplitHostPort(server.Addr)
		fmt.Fprintf(w, "  try: ip netns exec %s dig @%s +short %s\n", layout.VPCNetns(server.Cluster), host, names[0].DNSName())
	}
}
