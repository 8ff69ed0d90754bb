package check

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// checkMirrors compares the remote Services the service mirror selects with the local mirrors
// of that remote: each of the first SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE, in namespace/name
// order, must have a mirror with the same ports, the others none, and each mirror a Service.
// Services beyond the limit make a warning, not a failure: leaving them out is what was asked.
func checkMirrors(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_MIRROR_LABEL_SELECTOR", "mirror.semaphore.uw.io/mirror-service=true")
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	limit, err := strconv.Atoi(env(c, "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "1000"))
	if err != nil || limit < 1 {
		return fail(res, "check-mirrors", "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE of %s is not a positive number: %q", c.WorkloadRef(), env(c, "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", ""))
	}
	selected, beyond, err := selectedServices(ctx, remote, selector, limit)
	if err != nil {
		return fail(res, "check-probe-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	mirrors, err := mirrorsOf(ctx, local, namespace, remoteName)
	if err != nil {
		return fail(res, "check-mirrors", "listing the mirrors of remote %s in namespace %s: %v", remoteName, namespace, err)
	}
	missing, differ, extra := compare(selected, mirrors, func(svc, m *corev1.Service) bool {
		// The controller's own comparison: what it would still write.
		src := mirror.Source{Cluster: remoteName, Namespace: svc.Namespace, Name: svc.Name}
		change, _ := mirror.UpdateService(mirror.Service(src, namespace, svc), m)
		return change == mirror.NoChange
	})
	what := drift(
		finding{"remote Services have no mirror", missing},
		finding{"mirrors differ from their Service (ports, headless, session affinity)", names(mirrors, differ)},
		finding{"mirrors have no selected remote Service", names(mirrors, extra)})
	switch {
	case what == "" && len(beyond) > 0:
		return warn(res, "%d Services selected by %s mirrored in namespace %s; %d more beyond SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE=%d left out (%s)",
			len(selected), selector, namespace, len(beyond), limit, most(beyond, 5))
	case what == "":
		return pass(res, "%d Services selected by %s, each mirrored in namespace %s", len(selected), selector, namespace)
	}
	return fail(res, "check-mirrors", "the mirrors of remote %s drift: %s; see the logs of %s", remoteName, what, c.WorkloadRef())
}

// selectedServices are the first limit Services of remote selected by selector, in
// namespace/name order and by namespace/name, and the namespace/name of the others.
func selectedServices(ctx context.Context, remote kubernetes.Interface, selector string, limit int) (map[string]*corev1.Service, []string, error) {
	list, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(list.Items, func(a, b corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	selected := map[string]*corev1.Service{}
	var beyond []string
	for i := range list.Items {
		svc := &list.Items[i]
		if i < limit {
			selected[svc.Namespace+"/"+svc.Name] = svc
		} else {
			beyond = append(beyond, svc.Namespace+"/"+svc.Name)
		}
	}
	return selected, beyond, nil
}

// mirrorsOf are the mirrors of remote's Services in namespace, by the namespace/name of the
// Service they mirror.
func mirrorsOf(ctx context.Context, local kubernetes.Interface, namespace, remote string) (map[string]*corev1.Service, error) {
	mine := labels.Set{ownership.ManagedBy: ownership.ServiceMirror, mirror.LabelCluster: remote}
	list, err := local.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.Service{}
	for i := range list.Items {
		m := &list.Items[i]
		if src, ok := mirror.SourceOf(m.Labels); ok {
			out[src.Namespace+"/"+src.Name] = m
		}
	}
	return out, nil
}

// names are the names of the mirrors of keys.
func names(mirrors map[string]*corev1.Service, keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, mirrors[k].Name)
	}
	return out
}
