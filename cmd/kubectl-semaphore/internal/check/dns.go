package check

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
)

// Where CoreDNS keeps its configuration and runs, as kubeadm and most distributions deploy it
// (docs/coredns.md).
const (
	dnsNamespace   = "kube-system"
	corefileMap    = "coredns"
	corefileKey    = "Corefile"
	dnsPodSelector = "k8s-app=kube-dns"
	dnsMetricsPort = 9153
	// pluginEnabledMetric is 1 for each plugin of each server CoreDNS runs.
	pluginEnabledMetric = "coredns_plugin_enabled"
)

// sampleService is the Service whose names the dns check resolves through the rules: any will do
// whose mirror's name is not shortened.
var sampleService = mirror.Source{Namespace: "sys-log", Name: "fluentd"}

// corefile is the Corefile the cluster's CoreDNS runs: where it was found (with a warning when
// not where expected), and what it serves.
type corefile struct {
	where, warning string
	blocks         []serverBlock
}

// dnsRunning is what the CoreDNS pods say of the rewrite plugin: whether they all run it, and
// whether that is known at all.
type dnsRunning struct {
	says      string
	ok, known bool
}

// checkDNS checks, for each remote of the service mirror, that the CoreDNS Corefile has the
// rewrite of docs/coredns.md that makes <name>.<namespace>.svc.cluster.<remote> the mirror's
// name (and, with global services on, cluster.global the global Service's), that it rewrites
// the answers back, and that the running CoreDNS pods loaded the rewrite plugin.
func (k *checker) checkDNS(ctx context.Context, c release.Component) []Result {
	res := func(remote string) Result {
		return Result{Check: DNS, Cluster: c.LocalCluster(), Remote: remote}
	}
	cf, err := k.readCorefile(ctx)
	if err != nil {
		return []Result{fail(res(""), "check-dns", "reading the CoreDNS configuration in %s: %v", dnsNamespace, err)}
	}
	if cf.where == "" {
		return []Result{warnRunbook(res(""), "check-dns", "no CoreDNS Corefile in %s (no ConfigMap with a %s key): the names <service>.<namespace>.svc.cluster.<remote> resolve only where your cluster's DNS rewrites them as docs/coredns.md describes", dnsNamespace, corefileKey)}
	}
	running := k.rewriteLoaded(ctx)
	namespace := env(c, "SEMAPHORE_MIRROR_NAMESPACE", "semaphore")
	var out []Result
	for _, remote := range c.RemoteNames() {
		src := sampleService
		src.Cluster = remote
		query := fmt.Sprintf("%s.%s.svc.cluster.%s.", src.Name, src.Namespace, remote)
		out = append(out, dnsResult(res(remote), cf, query, mirror.ServiceName(src), namespace, running))
	}
	if env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector) != "" {
		key := global.Key{Namespace: sampleService.Namespace, Name: sampleService.Name}
		query := fmt.Sprintf("%s.%s.svc.cluster.global.", key.Name, key.Namespace)
		out = append(out, dnsResult(res(""), cf, query, global.ServiceName(key), namespace, running))
	}
	return out
}

// dnsResult checks that a rule of cf maps query to service in namespace of the cluster domain,
// rewriting the answers back, and that CoreDNS runs it.
func dnsResult(res Result, cf corefile, query, service, namespace string, running dnsRunning) Result {
	var unanswered string
	for _, b := range cf.blocks {
		if !b.serves(query) {
			continue
		}
		want := fmt.Sprintf("%s.%s.svc.%s.", service, namespace, b.clusterDomain())
		for _, r := range b.rewrites() {
			got, ok := r.apply(query)
			switch {
			case !ok || got != want:
				continue
			case !r.answers:
				unanswered = r.text
				continue
			case !running.ok && running.known:
				return fail(res, "check-dns", "%s maps %s to %s, but %s", cf.where, query, want, running.says)
			case !running.known || cf.warning != "":
				return warnRunbook(res, "check-dns", "%s maps %s to %s%s; %s", cf.where, query, want, cf.warning, running.says)
			}
			return pass(res, "%s maps %s to %s; %s", cf.where, query, want, running.says)
		}
	}
	if unanswered != "" {
		return fail(res, "check-dns", "%s maps %s with %q, which does not rewrite the answers back (answer auto): glibc and other stub resolvers drop them; add answer auto as docs/coredns.md shows",
			cf.where, query, unanswered)
	}
	return fail(res, "check-dns", "no rewrite in %s maps %s to the Service %s in namespace %s: add the rule of docs/coredns.md (the remote in its list, the mirror namespace in its target) to the block that serves it",
		cf.where, query, service, namespace)
}

// readCorefile reads the Corefile of kube-system/coredns or, failing that, of the first
// ConfigMap in kube-system that has one (with a warning); where is "" when none has.
func (k *checker) readCorefile(ctx context.Context) (corefile, error) {
	cm, err := k.client.CoreV1().ConfigMaps(dnsNamespace).Get(ctx, corefileMap, metav1.GetOptions{})
	if err == nil && cm.Data[corefileKey] != "" {
		return corefile{where: "the Corefile of " + dnsNamespace + "/" + corefileMap, blocks: parseCorefile(cm.Data[corefileKey])}, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return corefile{}, err
	}
	list, err := k.client.CoreV1().ConfigMaps(dnsNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return corefile{}, err
	}
	for _, m := range list.Items {
		if text := m.Data[corefileKey]; text != "" {
			return corefile{where: "the Corefile of " + dnsNamespace + "/" + m.Name, blocks: parseCorefile(text),
				warning: fmt.Sprintf(" (found in ConfigMap %s, not %s: check it is the one CoreDNS runs)", m.Name, corefileMap)}, nil
		}
	}
	return corefile{}, nil
}

// rewriteLoaded says whether the CoreDNS pods run a configuration with the rewrite plugin
// (coredns_plugin_enabled, read through the API server's pod proxy).
func (k *checker) rewriteLoaded(ctx context.Context) dnsRunning {
	pods, err := k.client.CoreV1().Pods(dnsNamespace).List(ctx, metav1.ListOptions{LabelSelector: dnsPodSelector})
	if err != nil {
		return dnsRunning{says: fmt.Sprintf("whether CoreDNS runs it is not known (listing its pods: %v)", err)}
	}
	var without, unread, loaded []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		p := k.scrapePod(ctx, pod, dnsPort(pod))
		switch {
		case p.err != nil:
			unread = append(unread, pod.Name)
		case !p.metrics.Has(pluginEnabledMetric):
			unread = append(unread, pod.Name+" (no "+pluginEnabledMetric+")")
		case slices.ContainsFunc(p.metrics.Where(pluginEnabledMetric, "name", "rewrite"), func(s series) bool { return s.Value == 1 }):
			loaded = append(loaded, pod.Name)
		default:
			without = append(without, pod.Name)
		}
	}
	switch {
	case len(without) > 0:
		return dnsRunning{known: true, says: fmt.Sprintf("CoreDNS pods %s run a configuration without the rewrite plugin: they have not reloaded the Corefile (the reload plugin takes a minute or two; else kubectl -n %s rollout restart deployment coredns)", most(without, 5), dnsNamespace)}
	case len(unread) > 0:
		return dnsRunning{says: fmt.Sprintf("whether CoreDNS pods %s run it is not known: their metrics could not be read through the API server's pod proxy", most(unread, 5))}
	case len(loaded) == 0:
		return dnsRunning{says: fmt.Sprintf("no running CoreDNS pod (%s in %s) tells whether it runs it", dnsPodSelector, dnsNamespace)}
	}
	return dnsRunning{ok: true, known: true, says: fmt.Sprintf("CoreDNS pods %s run it (%s{name=\"rewrite\"})", most(loaded, 5), pluginEnabledMetric)}
}

// dnsPort is the port of a CoreDNS pod's metrics: its container port named metrics, else 9153.
func dnsPort(pod *corev1.Pod) int {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "metrics" {
				return int(p.ContainerPort)
			}
		}
	}
	return dnsMetricsPort
}
