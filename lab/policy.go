package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// calicoAPI is the API group semaphore-policy writes its GlobalNetworkSets to in the lab: the
// umbrella chart's default.
const calicoAPI = calico.APIv3

// calicoCRD is the GlobalNetworkSet CRD of calicoAPI that every cluster's API server gets. In a
// real cluster the Calico API server (an aggregated API) serves projectcalico.org/v3; the lab has
// no Calico, and this CRD, with the same group, version, kind, scope and schema, stands in for
// it: the controller sees the same REST paths and objects. The crd.projectcalico.org/v1 CRD of the
// same fixtures is left out, as the controller writes to one group only.
var calicoCRD = filepath.Join(testbed.RepoRoot(), "components", "policy", "testdata", "crds", "projectcalico.org_globalnetworksets.yaml")

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
func expectedSets(st *State) []expectedSet {
	src := netset.Source{Cluster: forwarderCluster, Namespace: sampleNamespace, Name: forwarderName}
	var nets []string
	for _, ip := range st.podIPs(forwarderCluster, forwarderName) {
		nets = append(nets, ip+"/32")
	}
	// semaphore-policy sorts a set's nets by address.
	slices.SortFunc(nets, func(a, b string) int {
		return netip.MustParsePrefix(a).Addr().Compare(netip.MustParsePrefix(b).Addr())
	})
	var out []expectedSet
	for _, c := range remotesOf(forwarderCluster) {
		out = append(out, expectedSet{Cluster: c, Source: src, Nets: nets})
	}
	return out
}

// NetSetStatus is one GlobalNetworkSet of semaphore-policy.
type NetSetStatus struct {
	Name     string
	Source   netset.Source
	SourceOK bool // the set carries all three source labels
	Nets     []string
}

// listNetworkSets lists semaphore-policy's GlobalNetworkSets in a cluster.
func listNetworkSets(ctx context.Context, kubeconfig string) ([]NetSetStatus, error) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	sets, err := policySets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []NetSetStatus
	for _, set := range sets {
		s := NetSetStatus{Name: set.Name, Nets: set.Spec.Nets}
		s.Source, s.SourceOK = netset.SourceOf(set.Labels)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b NetSetStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// policySets are semaphore-policy's GlobalNetworkSets (of calicoAPI) in the cluster cfg reaches.
func policySets(ctx context.Context, cfg *rest.Config) ([]calico.GlobalNetworkSet, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	resource, err := calico.Resource(calicoAPI)
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
	perCluster[NetSetStatus]
}

func (n *netSetsStatus) collect(ctx context.Context, st *State) {
	n.perCluster = listInEveryCluster(ctx, st, listNetworkSets)
}

// problems: the forwarders' network set with exactly their nets in every other cluster, and
// no other set (none holds its own cluster's pods). Without nodes there are no pods, and
// nothing to check.
func (n *netSetsStatus) problems(st *State) []string {
	if st.nodesSkipped() {
		return nil
	}
	problems := n.listProblems(st, "GlobalNetworkSets")
	want := expectedSets(st)
	for _, e := range want {
		if n.errs[e.Cluster] != nil {
			continue
		}
		got, ok := n.findItem(e.Cluster, func(s NetSetStatus) bool { return s.Name == e.Name() })
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

func (n *netSetsStatus) print(w io.Writer, st *State) {
	section(w, fmt.Sprintf("Network sets (semaphore-policy, GlobalNetworkSets %s)", calicoAPI))
	n.printRows(w, st, func(c string, s NetSetStatus) string {
		src := "of " + s.Source.String()
		if !s.SourceOK {
			src = "(source labels missing)"
		}
		return fmt.Sprintf("  %s\t%s\t%s\t%s\n", c, s.Name, strings.Join(s.Nets, ", "), src)
	})
	fmt.Fprintf(w, "  a CRD stands in for the Calico API server, and no Calico enforces anything here;\n")
	fmt.Fprintf(w, "  docs/policy.md shows the Calico NetworkPolicy that selects a set by its labels\n")
}
