package check

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// checkGlobalServices compares the remote's global services with their local Services and
// EndpointSlices: each global service the remote has must have its local Service, with one
// local slice for every slice the remote has of it, and no local slice of that remote may stand
// for a global service the remote no longer has. Each side is read with one list.
func checkGlobalServices(ctx context.Context, local, remote kubernetes.Interface, c release.Component, remoteName string, res Result) Result {
	selector := env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector)
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	remoteSvcs, err := remote.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fail(res, "check-probe-access", "listing the Services of remote %s selected by %s: %v", remoteName, selector, err)
	}
	remoteSlices, err := remote.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(res, "check-probe-access", "listing the EndpointSlices of remote %s: %v", remoteName, err)
	}
	localSvcs, err := local.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.ServiceMirror})
	if err != nil {
		return fail(res, "check-global-services", "listing the global Services in namespace %s: %v", namespace, err)
	}
	mine := labels.Set{ownership.ManagedBy: ownership.ServiceMirror, global.LabelCluster: remoteName}
	copies, err := local.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: mine.String()})
	if err != nil {
		return fail(res, "check-global-services", "listing the global EndpointSlices of remote %s in namespace %s: %v", remoteName, namespace, err)
	}

	wantSvcs, wantSlices := wantedGlobal(remoteName, remoteSvcs.Items, remoteSlices.Items)
	present, copied := map[string]bool{}, map[string]bool{}
	for _, svc := range localSvcs.Items {
		present[svc.Name] = true
	}
	for _, s := range copies.Items {
		copied[s.Name] = true
	}
	missing, _, _ := compare(wantSvcs, present, asWanted)
	absent, _, extra := compare(wantSlices, copied, asWanted)
	what := drift(
		finding{"global Services missing", missing},
		finding{"slices of the remote not copied", absent},
		finding{"copied slices the remote no longer has", extra})
	if what == "" {
		return pass(res, "%d global services of remote %s (selected by %s), their %d endpoint slices copied here", len(remoteSvcs.Items), remoteName, selector, len(wantSlices))
	}
	return fail(res, "check-global-services", "the global services of remote %s drift: %s; see the logs of %s",
		remoteName, what, c.WorkloadRef())
}

// wantedGlobal are the names of the local Services and slice copies the service mirror should
// have made of remote's global services svcs, which have slices among slices.
func wantedGlobal(remote string, svcs []corev1.Service, slices []discoveryv1.EndpointSlice) (services, copies map[string]bool) {
	services, copies = map[string]bool{}, map[string]bool{}
	selected := map[global.Key]bool{}
	for _, svc := range svcs {
		k := global.Key{Namespace: svc.Namespace, Name: svc.Name}
		selected[k] = true
		services[global.ServiceName(k)] = true
	}
	for _, s := range slices {
		if k := (global.Key{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}); selected[k] {
			copies[global.SliceName(k, remote, s.Name)] = true
		}
	}
	return services, copies
}

// asWanted is compare's test for objects that are as wanted whenever they are there.
func asWanted(_, _ bool) bool { return true }
