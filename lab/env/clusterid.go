package env

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// setClusterIDs serves the About API's ClusterProperty in every cluster and sets the IDs of
// layout.ClusterIDs, before the charts are installed: the service mirrors read them at their start.
func (l *Lab) setClusterIDs(ctx context.Context) error {
	props := schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}
	for _, spec := range layout.ClusterSpecs {
		cfg := l.clusters[spec.Name].Config
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{testbed.ClusterPropertyCRDs()}, ErrorIfPathMissing: true}); err != nil {
			return fmt.Errorf("%s: the ClusterProperty CRD: %w", spec.Name, err)
		}
		id, ok := layout.ClusterIDs[spec.Name]
		if !ok {
			continue
		}
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		prop := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": mcs.ClusterIDProperty}, "spec": map[string]any{"value": id},
		}}
		if _, err := client.Resource(props).Create(ctx, prop, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("%s: ClusterProperty %s: %w", spec.Name, mcs.ClusterIDProperty, err)
		}
		l.Logf("%s says its cluster ID is %s (ClusterProperty %s)", spec.Name, id, mcs.ClusterIDProperty)
	}
	return nil
}
