package status

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// expectedSet is a GlobalNetworkSet the sample workloads must lead to.
type expectedSet struct {
	Cluster string
	Source  netset.Source
	Nets    []string
}

// Name is the set's name as docs/policy.md gives it: <remote>-<namespace>-<set>.
func (e expectedSet) Name() string {
	return e.Source.Cluster + "-" + e.Source.Namespace + "-" + e.Source.Name
}

// expectedSets are the forwarder pods' sets: one in every cluster but their own, holding the
// pods' IPs as /32 networks, sorted by address.
func expectedSets(rec *layout.Record) []expectedSet {
	src := netset.Source{Cluster: layout.ForwarderCluster, Namespace: layout.SampleNamespace, Name: layout.ForwarderName}
	var nets []string
	for _, ip := range rec.PodIPs(layout.ForwarderCluster, layout.ForwarderName) {
		nets = append(nets, ip+"/32")
	}
	// semaphore-policy sorts a set's nets by address.
	slices.SortFunc(nets, func(a, b string) int {
		return netip.MustParsePrefix(a).Addr().Compare(netip.MustParsePrefix(b).Addr())
	})
	var out []expectedSet
	for _, c := range layout.RemotesOf(layout.ForwarderCluster) {
		out = append(out, expectedSet{Cluster: c, Source: src, Nets: nets})
	}
	return out
}

// NetSet is one GlobalNetworkSet of semaphore-policy.
type NetSet struct {
	Name     string
	Source   netset.Source
	SourceOK bool // the set carries all three source labels
	Nets     []string
}

// ListNetworkSets lists semaphore-policy's GlobalNetworkSets in a cluster.
func ListNetworkSets(ctx context.Context, kubeconfig string) ([]NetSet, error) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	sets, err := PolicySets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []NetSet
	for _, set := range sets {
		s := NetSet{Name: set.Name, Nets: set.Spec.Nets}
		s.Source, s.SourceOK = netset.SourceOf(set.Labels)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b NetSet) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PolicySets are semaphore-policy's GlobalNetworkSets (of CalicoAPI) in the cluster cfg reaches.
func PolicySets(ctx context.Context, cfg *rest.Config) ([]calico.GlobalNetworkSet, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	resource, err := calico.Resource(layout.CalicoAPI)
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(resource).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.Policy})
	if err != nil {
		return nil, err
	}
	out := make([]calico.GlobalNetworkSet, 0, len(list.Items))
	for i := range list.Items {
		set, err := calico.FromUnstructured(&list.Items[i])
		if err != nil {
			return nil, fmt.Errorf("GlobalNetworkSet %s: %w", list.Items[i].GetName(), err)
		}
		out = append(out, *set)
	}
	return out, nil
}

// netSetsStatus is the status of semaphore-policy: its GlobalNetworkSets in every cluster.
type netSetsStatus struct {
	perCluster[NetSet]
}

func (n *netSetsStatus) collect(ctx context.Context, rec *layout.Record) {
	n.perCluster = listInEveryCluster(ctx, rec, ListNetworkSets)
}

// problems: the forwarders' network set with exactly their nets in every other cluster, and
// no other set (none holds its own cluster's pods). Without nodes there are no pods, and
// nothing to check.
func (n *netSetsStatus) problems(rec *layout.Record) []string {
	if rec.NodesSkipped() {
		return nil
	}
	problems := n.listProblems(rec, "GlobalNetworkSets")
	want := expectedSets(rec)
	for _, e := range want {
		if n.errs[e.Cluster] != nil {
			continue
		}
		got, ok := n.findItem(e.Cluster, func(s NetSet) bool { return s.Name == e.Name() })
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no GlobalNetworkSet %s of %s", e.Cluster, e.Name(), e.Source))
		case got.Source != e.Source:
			problems = append(problems, fmt.Sprintf("%s: GlobalNetworkSet %s has source labels %s, want %s", e.Cluster, e.Name(), got.Source, e.Source))
		case !slices.Equal(got.Nets, e.Nets):
			problems = append(problems, fmt.Sprintf("%s: GlobalNetworkSet %s has nets %v, want %v", e.Cluster, e.Name(), got.Nets, e.Nets))
		}
	}
	for cluster, sets := range n.items {
		for _, got := range sets {
			if !slices.ContainsFunc(want, func(e expectedSet) bool { return e.Cluster == cluster && e.Name() == got.Name }) {
				problems = append(problems, fmt.Sprintf("%s: unexpected GlobalNetworkSet %s", cluster, got.Name))
			}
		}
	}
	return problems
}

func (n *netSetsStatus) print(w io.Writer, rec *layout.Record) {
	section(w, fmt.Sprintf("Network sets (semaphore-policy, GlobalNetworkSets %s)", layout.CalicoAPI))
	n.printRows(w, rec, func(c string, s NetSet) string {
		src := "of " + s.Source.String()
		if !s.SourceOK {
			src = "(source labels missing)"
		}
		return fmt.Sprintf("  %s\t%s\t%s\t%s\n", c, s.Name, strings.Join(s.Nets, ", "), src)
	})
	fmt.Fprintf(w, "  served by the Calico API server; Felix enforces docs/policy.md's NetworkPolicy, which selects a set by\n")
	fmt.Fprintf(w, "  its labels, on fluentd once lab check's \"Calico policy\" has applied it (without nodes, no Calico runs)\n")
}
