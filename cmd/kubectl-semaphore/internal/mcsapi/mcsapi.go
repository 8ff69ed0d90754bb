// Package mcsapi reads what the Multi-Cluster Services API holds in a cluster, for the status
// and check commands: whether the cluster serves the API, its ServiceExports with their
// conditions, and the ServiceImports the service mirror holds with the EndpointSlices it
// imported for them. The API's objects are read through the dynamic client, which speaks JSON:
// their types have no protobuf, which the plugin's typed clients ask for.
package mcsapi

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// GroupVersion is the API the service mirror serves, as discovery names it.
var GroupVersion = mcsv1beta1.GroupVersion.String()

var (
	exportsResource = mcsv1beta1.SchemeGroupVersion.WithResource(mcsv1beta1.ServiceExportPluralName)
	importsResource = mcsv1beta1.SchemeGroupVersion.WithResource(mcsv1beta1.ServiceImportPluralName)
)

// InstallCRDs says how to install the API's CRDs, which the semaphore chart holds in its
// service-mirror subchart's crds/: Helm installs those on a release's first install only.
const InstallCRDs = "install the Multi-Cluster Services CRDs of the semaphore chart version you run: kubectl apply --server-side -f charts/semaphore/charts/service-mirror/crds/ (Helm installs a chart's crds/ on its first install only, never on an upgrade)"

// Missing are the resources of the API that the cluster of d does not serve: none when it
// serves both ServiceExports and ServiceImports.
func Missing(d discovery.DiscoveryInterface) ([]string, error) {
	want := map[string]bool{mcsv1beta1.ServiceExportPluralName: true, mcsv1beta1.ServiceImportPluralName: true}
	list, err := d.ServerResourcesForGroupVersion(GroupVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if list != nil {
		for _, r := range list.APIResources {
			delete(want, r.Name)
		}
	}
	return slices.Sorted(maps.Keys(want)), nil
}

// ServiceExports are the ServiceExports of every namespace, in namespace/name order.
func ServiceExports(ctx context.Context, dyn dynamic.Interface) ([]mcsv1beta1.ServiceExport, error) {
	return list[mcsv1beta1.ServiceExport](ctx, dyn, exportsResource, "")
}

// ServiceImports are the ServiceImports the service mirror holds (those its labels mark), in
// namespace/name order.
func ServiceImports(ctx context.Context, dyn dynamic.Interface) ([]mcsv1beta1.ServiceImport, error) {
	return list[mcsv1beta1.ServiceImport](ctx, dyn, importsResource, ours())
}

// ImportedSlices are the EndpointSlices the service mirror imported for exported Services, by
// the Service they import.
func ImportedSlices(ctx context.Context, client kubernetes.Interface) (map[mcs.Key][]discoveryv1.EndpointSlice, error) {
	list, err := client.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{LabelSelector: ours()})
	if err != nil {
		return nil, err
	}
	out := map[mcs.Key][]discoveryv1.EndpointSlice{}
	for _, s := range list.Items {
		if k, ok := mcs.KeyOf(s.Labels); ok {
			out[k] = append(out[k], s)
		}
	}
	return out, nil
}

// ours selects the objects the service mirror makes for exported Services.
func ours() string {
	return labels.Set{ownership.ManagedBy: ownership.ServiceMirror}.String() + "," + mcs.LabelNamespace
}

// list lists the objects of resource selected by selector in every namespace as T, in
// namespace/name order.
func list[T any](ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, selector string) ([]T, error) {
	l, err := dyn.Resource(resource).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]T, len(l.Items))
	for i, u := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out[i]); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", resource.Resource, u.GetNamespace(), u.GetName(), err)
		}
	}
	return out, nil
}
