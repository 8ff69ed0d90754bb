package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/labels"
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

// checkMirrors compares the remote Services the service mirror selects with the local mirrors
// of that remote: each must have a mirror with the same ports, and each mirror a Service.
func checkMirrors(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_MIRROR_LABEL_SELECTOR", "mirror.semaphore.uw.io/mirror-service=true")
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	remoteSvcs, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fail(res, "check-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	mine := k8slabels.Set{labels.ManagedBy: labels.ServiceMirror, mirror.LabelCluster: remoteName}
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
		switch {
		case !ok:
			missing = append(missing, svc.Namespace+"/"+svc.Name)
		case !samePorts(mirror.Spec(svc).Ports, m.Spec.Ports):
			differ = append(differ, m.Name)
		}
	}
	for key, m := range have {
		if !want[key] {
			extra = append(extra, m.Name)
		}
	}
	if len(missing)+len(differ)+len(extra) == 0 {
		return pass(res, "%d Services selected by %s, each mirrored in namespace %s", len(remoteSvcs.Items), selector, namespace)
	}
	var what []string
	if len(missing) > 0 {
		what = append(what, fmt.Sprintf("%d remote Services have no mirror (%s)", len(missing), most(missing, 5)))
	}
	if len(differ) > 0 {
		what = append(what, fmt.Sprintf("%d mirrors have other ports than their Service (%s)", len(differ), most(differ, 5)))
	}
	if len(extra) > 0 {
		what = append(what, fmt.Sprintf("%d mirrors have no selected remote Service (%s)", len(extra), most(extra, 5)))
	}
	return fail(res, "check-mirrors", "the mirrors of remote %s drift: %s; see the logs of %s %s/%s", remoteName, strings.Join(what, "; "), c.Kind, c.Namespace, c.Workload)
}

func samePorts(want, have []corev1.ServicePort) bool {
	return slices.EqualFunc(want, have, func(a, b corev1.ServicePort) bool {
		return a.Name == b.Name && a.Protocol == b.Protocol && a.Port == b.Port && a.TargetPort == b.TargetPort
	})
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
	want := map[string][]string{}
	for src, ps := range groups {
		if nets, _ := netset.Nets(ps); len(nets) > 0 {
			want[netset.SetName(src)] = nets
		}
	}
	mine := k8slabels.Set{labels.ManagedBy: labels.Policy, netset.LabelCluster: remoteName}
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
	if len(missing)+len(differ)+len(extra) == 0 {
		return pass(res, "%d GlobalNetworkSets in sync with the pods labelled %s", len(want), label)
	}
	var what []string
	if len(missing) > 0 {
		what = append(what, fmt.Sprintf("%d sets missing (%s)", len(missing), most(missing, 5)))
	}
	if len(differ) > 0 {
		what = append(what, fmt.Sprintf("%d sets with other addresses than the pods' (%s)", len(differ), most(differ, 5)))
	}
	if len(extra) > 0 {
		what = append(what, fmt.Sprintf("%d sets without pods (%s)", len(extra), most(extra, 5)))
	}
	return fail(res, "check-network-sets", "the network sets of remote %s are out of sync: %s; see the logs of %s %s/%s",
		remoteName, strings.Join(what, "; "), c.Kind, c.Namespace, c.Workload)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// checkGlobalServices compares the remote's global services with their local Services and
// EndpointSlices: each global service the remote has must have its local Service, with one
// local slice for every slice the remote has of it, and no local slice of that remote may stand
// for a global service the remote no longer has.
func checkGlobalServices(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector)
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	remoteSvcs, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fail(res, "check-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	want := map[string]bool{}
	var missing []string
	for i := range remoteSvcs.Items {
		svc := &remoteSvcs.Items[i]
		k := global.Key{Namespace: svc.Namespace, Name: svc.Name}
		if _, err := local.CoreV1().Services(namespace).Get(ctx, global.ServiceName(k), metav1.GetOptions{}); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", global.ServiceName(k), err))
		}
		slices, err := remote.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: k8slabels.Set{discoveryv1.LabelServiceName: svc.Name}.String(),
		})
		if err != nil {
			return fail(res, "check-access", "listing the EndpointSlices of %s/%s in remote %s: %v", svc.Namespace, svc.Name, remoteName, err)
		}
		for _, s := range slices.Items {
			want[global.SliceName(k, remoteName, s.Name)] = true
		}
	}
	mine := k8slabels.Set{labels.ManagedBy: labels.ServiceMirror, global.LabelCluster: remoteName}
	have, err := local.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-global-services", "listing the global EndpointSlices of remote %s in namespace %s: %v", remoteName, namespace, err)
	}
	var extra []string
	seen := map[string]bool{}
	for _, s := range have.Items {
		seen[s.Name] = true
		if !want[s.Name] {
			extra = append(extra, s.Name)
		}
	}
	var absent []string
	for name := range want {
		if !seen[name] {
			absent = append(absent, name)
		}
	}
	if len(missing)+len(absent)+len(extra) == 0 {
		return pass(res, "%d global services of remote %s (selected by %s), their %d endpoint slices copied here", len(remoteSvcs.Items), remoteName, selector, len(want))
	}
	var what []string
	if len(missing) > 0 {
		what = append(what, fmt.Sprintf("%d global Services missing (%s)", len(missing), most(missing, 5)))
	}
	if len(absent) > 0 {
		what = append(what, fmt.Sprintf("%d slices of the remote not copied (%s)", len(absent), most(absent, 5)))
	}
	if len(extra) > 0 {
		what = append(what, fmt.Sprintf("%d copied slices the remote no longer has (%s)", len(extra), most(extra, 5)))
	}
	return fail(res, "check-global-services", "the global services of remote %s drift: %s; see the logs of %s %s/%s",
		remoteName, strings.Join(what, "; "), c.Kind, c.Namespace, c.Workload)
}
