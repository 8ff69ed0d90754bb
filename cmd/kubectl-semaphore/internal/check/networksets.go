package check

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// checkNetworkSets compares the remote pods carrying the policy label with the local
// GlobalNetworkSets of that remote: each set present with the pods' addresses, and no set
// without pods.
func checkNetworkSets(ctx context.Context, dyn dynamic.Interface, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	label := env(c, "SEMAPHORE_POLICY_LABEL", "policy.semaphore.uw.io/name")
	api := env(c, "SEMAPHORE_POLICY_CALICO_API", calico.APIv3)
	gvr, err := calico.Resource(api)
	if err != nil {
		return fail(res, "check-network-sets", "SEMAPHORE_POLICY_CALICO_API: %v", err)
	}
	podList, err := remote.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return fail(res, "check-probe-access", "listing the pods of remote %s labelled %s: %v", remoteName, label, err)
	}
	want := wantedSets(c, remoteName, label, podList.Items)
	mine := labels.Set{ownership.ManagedBy: ownership.Policy, netset.LabelCluster: remoteName}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-network-sets", "listing the GlobalNetworkSets (%s) of remote %s: %v; is Calico installed with that API?", gvr.GroupVersion(), remoteName, err)
	}
	have := map[string]*calico.GlobalNetworkSet{}
	var unreadable []string
	for i := range list.Items {
		set, err := calico.FromUnstructured(&list.Items[i])
		if err != nil {
			unreadable = append(unreadable, list.Items[i].GetName())
			continue
		}
		have[set.Name] = set
	}
	missing, differ, extra := compare(want, have, func(nets []string, set *calico.GlobalNetworkSet) bool {
		return slices.Equal(sorted(set.Spec.Nets), sorted(nets))
	})
	// A set that does not parse differs from the pods, and does not stand for them.
	differ = append(unreadable, differ...)
	what := drift(
		finding{"sets missing", missing},
		finding{"sets with other addresses than the pods'", differ},
		finding{"sets without pods", extra})
	if what == "" {
		return pass(res, "%d GlobalNetworkSets in sync with the pods labelled %s", len(want), label)
	}
	return fail(res, "check-network-sets", "the network sets of remote %s are out of sync: %s; see the logs of %s",
		remoteName, what, c.WorkloadRef())
}

// wantedSets are the addresses of the sets the component should have made of remote's pods,
// labelled label, by the name of the set.
func wantedSets(c release.Component, remote, label string, pods []corev1.Pod) map[string][]string {
	groups := map[netset.Source][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		src := netset.Source{Cluster: remote, Namespace: p.Namespace, Name: p.Labels[label]}
		groups[src] = append(groups[src], p)
	}
	// The rule the controller applies, with the component's ranges of every remote: what it
	// refuses as outside the remote's ranges or inside another remote's is not a difference. The
	// local cluster's ranges are not read here, so an address it refuses as local shows as a set
	// that differs. A value that does not parse (the pod-ranges check fails) leaves the rules
	// alone.
	ranges, _ := c.PodRanges()
	guard := addrguard.New(ranges).For(remote)
	want := map[string][]string{}
	for src, ps := range groups {
		if nets, _, _ := netset.Nets(ps, guard); len(nets) > 0 {
			want[netset.SetName(src)] = nets
		}
	}
	return want
}
