package check

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// env is the component's value of name, or def when it does not set it (the component's
// default).
func env(c release.Component, name, def string) string {
	if v, ok := c.Env[name]; ok {
		return v
	}
	return def
}

// most lists at most n items of s, saying how many more there are.
func most(s []string, n int) string {
	slices.Sort(s)
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// finding is one kind of drift: how many objects, described as what, and their names.
type finding struct {
	what  string
	names []string
}

// drift describes the findings that have names ("" when none has): "3 <what> (a, b, c); ...".
func drift(findings ...finding) string {
	var parts []string
	for _, f := range findings {
		if len(f.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(f.names), f.what, most(f.names, 5)))
		}
	}
	return strings.Join(parts, "; ")
}

// checkMirrors compares the remote Services the service mirror selects with the local mirrors
// of that remote: each of the first SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE, in namespace/name
// order, must have a mirror with the same ports, the others none, and each mirror a Service.
// Services beyond the limit make a warning, not a failure: leaving them out is what was asked.
func checkMirrors(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_MIRROR_LABEL_SELECTOR", "mirror.semaphore.uw.io/mirror-service=true")
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	limit, err := strconv.Atoi(env(c, "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "1000"))
	if err != nil || limit < 1 {
		return fail(res, "check-mirrors", "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE of %s %s/%s is not a positive number: %q", c.Kind, c.Namespace, c.Workload, env(c, "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", ""))
	}
	remoteSvcs, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fail(res, "check-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	slices.SortFunc(remoteSvcs.Items, func(a, b corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var beyond []string
	for _, svc := range remoteSvcs.Items[min(limit, len(remoteSvcs.Items)):] {
		beyond = append(beyond, svc.Namespace+"/"+svc.Name)
	}
	remoteSvcs.Items = remoteSvcs.Items[:min(limit, len(remoteSvcs.Items))]
	mine := labels.Set{ownership.ManagedBy: ownership.ServiceMirror, mirror.LabelCluster: remoteName}
	mirrors, err := local.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-mirrors", "listing the mirrors of remote %s in namespace %s: %v", remoteName, namespace, err)
	}
	have := map[string]*corev1.Service{}
	for i := range mirrors.Items {
		m := &mirrors.Items[i]
		if src, ok := mirror.SourceOf(m.Labels); ok {
			have[src.String()] = m
		}
	}
	var missing, differ, extra []string
	want := map[string]bool{}
	for i := range remoteSvcs.Items {
		svc := &remoteSvcs.Items[i]
		src := mirror.Source{Cluster: remoteName, Namespace: svc.Namespace, Name: svc.Name}
		want[src.String()] = true
		m, ok := have[src.String()]
		if !ok {
			missing = append(missing, svc.Namespace+"/"+svc.Name)
			continue
		}
		// The controller's own comparison: what it would still write.
		if change, _ := mirror.UpdateService(mirror.Service(src, namespace, svc), m); change != mirror.NoChange {
			differ = append(differ, m.Name)
		}
	}
	for key, m := range have {
		if !want[key] {
			extra = append(extra, m.Name)
		}
	}
	what := drift(
		finding{"remote Services have no mirror", missing},
		finding{"mirrors differ from their Service (ports, headless, session affinity)", differ},
		finding{"mirrors have no selected remote Service", extra})
	switch {
	case what == "" && len(beyond) > 0:
		return warn(res, "%d Services selected by %s mirrored in namespace %s; %d more beyond SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE=%d left out (%s)",
			len(remoteSvcs.Items), selector, namespace, len(beyond), limit, most(beyond, 5))
	case what == "":
		return pass(res, "%d Services selected by %s, each mirrored in namespace %s", len(remoteSvcs.Items), selector, namespace)
	}
	return fail(res, "check-mirrors", "the mirrors of remote %s drift: %s; see the logs of %s %s/%s", remoteName, what, c.Kind, c.Namespace, c.Workload)
}

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
		return fail(res, "check-access", "listing the pods of remote %s labelled %s: %v", remoteName, label, err)
	}
	groups := map[netset.Source][]*corev1.Pod{}
	for i := range podList.Items {
		p := &podList.Items[i]
		src := netset.Source{Cluster: remoteName, Namespace: p.Namespace, Name: p.Labels[label]}
		groups[src] = append(groups[src], p)
	}
	// The rule the controller applies, with the component's ranges of every remote: what it
	// refuses as outside the remote's ranges or inside another remote's is not a difference. The
	// local cluster's ranges are not read here, so an address it refuses as local shows as a set
	// that differs. A value that does not parse (the pod-ranges check fails) leaves the rules
	// alone.
	ranges, _ := c.PodRanges()
	guard := addrguard.New(ranges).For(remoteName)
	want := map[string][]string{}
	for src, ps := range groups {
		if nets, _, _ := netset.Nets(ps, guard); len(nets) > 0 {
			want[netset.SetName(src)] = nets
		}
	}
	mine := labels.Set{ownership.ManagedBy: ownership.Policy, netset.LabelCluster: remoteName}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-network-sets", "listing the GlobalNetworkSets (%s) of remote %s: %v; is Calico installed with that API?", gvr.GroupVersion(), remoteName, err)
	}
	var missing, differ, extra []string
	seen := map[string]bool{}
	for i := range list.Items {
		set, err := calico.FromUnstructured(&list.Items[i])
		if err != nil {
			differ = append(differ, list.Items[i].GetName())
			continue
		}
		seen[set.Name] = true
		nets, ok := want[set.Name]
		switch {
		case !ok:
			extra = append(extra, set.Name)
		case !slices.Equal(sorted(set.Spec.Nets), sorted(nets)):
			differ = append(differ, set.Name)
		}
	}
	for name := range want {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	what := drift(
		finding{"sets missing", missing},
		finding{"sets with other addresses than the pods'", differ},
		finding{"sets without pods", extra})
	if what == "" {
		return pass(res, "%d GlobalNetworkSets in sync with the pods labelled %s", len(want), label)
	}
	return fail(res, "check-network-sets", "the network sets of remote %s are out of sync: %s; see the logs of %s %s/%s",
		remoteName, what, c.Kind, c.Namespace, c.Workload)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// checkGlobalServices compares the remote's global services with their local Services and
// EndpointSlices: each global service the remote has must have its local Service, with one
// local slice for every slice the remote has of it, and no local slice of that remote may stand
// for a global service the remote no longer has. Each side is read with one list.
func checkGlobalServices(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector)
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	remoteSvcs, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fail(res, "check-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	remoteSlices, err := remote.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(res, "check-access", "listing the EndpointSlices of remote %s: %v", remoteName, err)
	}
	localSvcs, err := local.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.ServiceMirror})
	if err != nil {
		return fail(res, "check-global-services", "listing the global Services in namespace %s: %v", namespace, err)
	}
	mine := labels.Set{ownership.ManagedBy: ownership.ServiceMirror, global.LabelCluster: remoteName}
	have, err := local.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-global-services", "listing the global EndpointSlices of remote %s in namespace %s: %v", remoteName, namespace, err)
	}

	present := map[string]bool{}
	for _, svc := range localSvcs.Items {
		present[svc.Name] = true
	}
	selected := map[global.Key]bool{}
	var missing []string
	for _, svc := range remoteSvcs.Items {
		k := global.Key{Namespace: svc.Namespace, Name: svc.Name}
		selected[k] = true
		if !present[global.ServiceName(k)] {
			missing = append(missing, global.ServiceName(k))
		}
	}
	want := map[string]bool{}
	for _, s := range remoteSlices.Items {
		if k := (global.Key{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}); selected[k] {
			want[global.SliceName(k, remoteName, s.Name)] = true
		}
	}
	var extra, absent []string
	seen := map[string]bool{}
	for _, s := range have.Items {
		seen[s.Name] = true
		if !want[s.Name] {
			extra = append(extra, s.Name)
		}
	}
	for name := range want {
		if !seen[name] {
			absent = append(absent, name)
		}
	}
	what := drift(
		finding{"global Services missing", missing},
		finding{"slices of the remote not copied", absent},
		finding{"copied slices the remote no longer has", extra})
	if what == "" {
		return pass(res, "%d global services of remote %s (selected by %s), their %d endpoint slices copied here", len(remoteSvcs.Items), remoteName, selector, len(want))
	}
	return fail(res, "check-global-services", "the global services of remote %s drift: %s; see the logs of %s %s/%s",
		remoteName, what, c.Kind, c.Namespace, c.Workload)
}
