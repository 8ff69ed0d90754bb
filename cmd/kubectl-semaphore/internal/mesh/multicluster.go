package mesh

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mcsapi"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
)

// MultiCluster is what the service mirror serves of the Multi-Cluster Services API
// (SEMAPHORE_MCS_ENABLED): the local ServiceExports with the conditions it set on them, and the
// ServiceImports it holds.
type MultiCluster struct {
	Exports []ServiceExport `json:"exports"`
	Imports []ServiceImport `json:"imports"`
}

// ServiceExport is a local ServiceExport and its conditions.
type ServiceExport struct {
	// Name is its namespace/name, the exported Service's.
	Name     string    `json:"name"`
	Valid    Condition `json:"valid"`
	Ready    Condition `json:"ready"`
	Conflict Condition `json:"conflict"`
}

// Condition is one condition of a ServiceExport; Status is "" when the export has none of its
// type (the service mirror has not synced it yet).
type Condition struct {
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ServiceImport is a ServiceImport the service mirror holds, with the endpoints of the
// EndpointSlices it imported for it.
type ServiceImport struct {
	// Name is its namespace/name, the exported Service's.
	Name string `json:"name"`
	// Type is ClusterSetIP or Headless.
	Type string `json:"type"`
	// IPs are a ClusterSetIP import's addresses (its derived Service's), none for a headless one.
	IPs []string `json:"ips,omitempty"`
	// Endpoints counts the endpoints of its slices, Ready those not marked unready.
	Endpoints int `json:"endpoints"`
	Ready     int `json:"ready"`
	// Clusters counts the endpoints by the cluster they come from (the slices'
	// multicluster.kubernetes.io/source-cluster label).
	Clusters map[string]int `json:"clusters"`
}

// multiCluster reads, when the service mirror c serves the Multi-Cluster Services API, the
// local ServiceExports and the ServiceImports it holds with their endpoints; where the cluster
// does not serve the API, there are none to read, and a problem says how to install it.
func (st *ClusterState) multiCluster(ctx context.Context, s Sources, c release.Component) {
	if !c.ServesMCS() {
		return
	}
	missing, err := mcsapi.Missing(s.Client.Discovery())
	switch {
	case err != nil:
		st.problem("asking whether the cluster serves %s: %v", mcsapi.GroupVersion, err)
		return
	case len(missing) > 0:
		st.problem("the service mirror serves the Multi-Cluster Services API (%s=true), but the cluster does not serve %s (no %s): %s",
			release.MCSEnabledEnv, mcsapi.GroupVersion, strings.Join(missing, ", "), mcsapi.InstallCRDs)
		return
	case s.Dynamic == nil:
		st.problem("no dynamic client: ServiceExports and ServiceImports not read")
		return
	}
	st.MultiCluster = &MultiCluster{Exports: []ServiceExport{}, Imports: []ServiceImport{}}
	st.serviceExports(ctx, s)
	st.serviceImports(ctx, s)
}

// serviceExports reads the local ServiceExports and their conditions.
func (st *ClusterState) serviceExports(ctx context.Context, s Sources) {
	exports, err := mcsapi.ServiceExports(ctx, s.Dynamic)
	if err != nil {
		st.problem("reading the ServiceExports: %v", err)
		return
	}
	for i := range exports {
		se := &exports[i]
		st.MultiCluster.Exports = append(st.MultiCluster.Exports, ServiceExport{
			Name:     se.Namespace + "/" + se.Name,
			Valid:    conditionOf(se, mcsv1beta1.ServiceExportConditionValid),
			Ready:    conditionOf(se, mcsv1beta1.ServiceExportConditionReady),
			Conflict: conditionOf(se, mcsv1beta1.ServiceExportConditionConflict),
		})
	}
}

func conditionOf(se *mcsv1beta1.ServiceExport, t mcsv1beta1.ServiceExportConditionType) Condition {
	c := meta.FindStatusCondition(se.Status.Conditions, string(t))
	if c == nil {
		return Condition{}
	}
	return Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
}

// serviceImports reads the ServiceImports the service mirror holds and counts the endpoints of
// the slices it imported for each, by source cluster.
func (st *ClusterState) serviceImports(ctx context.Context, s Sources) {
	imports, err := mcsapi.ServiceImports(ctx, s.Dynamic)
	if err != nil {
		st.problem("reading the ServiceImports: %v", err)
		return
	}
	slices, err := mcsapi.ImportedSlices(ctx, s.Client)
	if err != nil {
		st.problem("reading the imported EndpointSlices: %v", err)
	}
	for _, si := range imports {
		imp := ServiceImport{Name: si.Namespace + "/" + si.Name, Type: string(si.Spec.Type), IPs: si.Spec.IPs, Clusters: map[string]int{}}
		var n count
		for _, sl := range slices[mcs.Key{Namespace: si.Namespace, Name: si.Name}] {
			n = n.add(sl)
			imp.Clusters[sl.Labels[mcsv1beta1.LabelSourceCluster]] += len(sl.Endpoints)
		}
		imp.Endpoints, imp.Ready = n.all, n.ready
		st.MultiCluster.Imports = append(st.MultiCluster.Imports, imp)
	}
}
