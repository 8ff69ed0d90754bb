package mesh

import (
	"cmp"
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// mirrors reads the mirror Services and global Services in the service mirror's namespace and
// counts the endpoints of their EndpointSlices.
func (st *ClusterState) mirrors(ctx context.Context, s Sources, c release.Component, remote func(string) *RemoteState) {
	ns := cmp.Or(c.Env["SEMAPHORE_MIRROR_NAMESPACE"], "semaphore")
	ours := metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.ServiceMirror}
	services, err := s.Client.CoreV1().Services(ns).List(ctx, ours)
	if err != nil {
		st.problem("reading the mirror Services in namespace %s: %v", ns, err)
		return
	}
	eps, err := s.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, ours)
	if err != nil {
		st.problem("reading the mirror EndpointSlices in namespace %s: %v", ns, err)
		return
	}
	// endpoints counts by Service name, and for global services by source cluster too.
	endpoints := map[string]count{}
	byCluster := map[string]map[string]int{}
	for _, sl := range eps.Items {
		svc := sl.Labels[discoveryv1.LabelServiceName]
		endpoints[svc] = endpoints[svc].add(sl)
		if cluster := sl.Labels[global.LabelCluster]; cluster != "" {
			if byCluster[svc] == nil {
				byCluster[svc] = map[string]int{}
			}
			byCluster[svc][cluster] += len(sl.Endpoints)
		}
	}
	for _, svc := range services.Items {
		if src, ok := mirror.SourceOf(svc.Labels); ok {
			n := endpoints[svc.Name]
			r := remote(src.Cluster)
			r.Mirrors = append(r.Mirrors, Mirror{Name: svc.Name, Source: src.Namespace + "/" + src.Name, Endpoints: n.all, Ready: n.ready})
			continue
		}
		if k, ok := global.KeyOf(svc.Labels); ok {
			g := GlobalService{Name: svc.Name, Service: k.String(), Endpoints: byCluster[svc.Name]}
			if g.Endpoints == nil {
				g.Endpoints = map[string]int{}
			}
			st.GlobalServices = append(st.GlobalServices, g)
		}
	}
}

// count is a number of endpoints, and how many of them are ready.
type count struct{ all, ready int }

// add is c with the endpoints of slice counted: ready unless marked not ready.
func (c count) add(slice discoveryv1.EndpointSlice) count {
	for _, e := range slice.Endpoints {
		c.all++
		if e.Conditions.Ready == nil || *e.Conditions.Ready {
			c.ready++
		}
	}
	return c
}

// networkSets reads the GlobalNetworkSets semaphore-policy made, from the API group it writes.
func (st *ClusterState) networkSets(ctx context.Context, s Sources, c release.Component, remote func(string) *RemoteState) {
	api := cmp.Or(c.Env["SEMAPHORE_POLICY_CALICO_API"], calico.APIv3)
	gvr, err := calico.Resource(api)
	if err != nil {
		st.problem("policy: SEMAPHORE_POLICY_CALICO_API: %v", err)
		return
	}
	if s.Dynamic == nil {
		st.problem("no dynamic client: network sets not read")
		return
	}
	list, err := s.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + ownership.Policy})
	if err != nil {
		if apierrors.IsNotFound(err) {
			hint := "are Calico's CRDs installed?"
			if api == calico.APIv3 {
				hint = "is the Calico API server installed?"
			}
			st.problem("GlobalNetworkSets: the cluster does not serve %s (%s)", api, hint)
			return
		}
		st.problem("reading the GlobalNetworkSets (%s): %v", api, err)
		return
	}
	for i := range list.Items {
		set, err := calico.FromUnstructured(&list.Items[i])
		if err != nil {
			st.problem("%v", err)
			continue
		}
		src, ok := netset.SourceOf(set.Labels)
		if !ok {
			continue
		}
		r := remote(src.Cluster)
		r.NetworkSets = append(r.NetworkSets, NetworkSet{Name: set.Name, Source: src.Namespace + "/" + src.Name, Nets: len(set.Spec.Nets)})
	}
}
