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
)

// clusterIDs are the IDs the lab's clusters say in their ClusterProperty cluster.clusterset.k8s.io
// (the About API), as a clusterset's tooling would set them: merit has one, aws and gcp have none
// and are known by their names. The imported endpoints of the Multi-Cluster Services API carry
// the ID as their source cluster.
var clusterIDs = map[string]string{"merit": "merit-onprem-1"}

// ClusterID is the ID of cluster in the clusterset: its ClusterProperty's, else its name.
func ClusterID(cluster string) string {
	if id, ok := clusterIDs[cluster]; ok {
		return id
	}
	return cluster
}

// setClusterIDs serves the About API's ClusterProperty in every cluster and sets the IDs of
// clusterIDs, before the charts are installed: the service mirrors read them at their start.
func (l *Lab) setClusterIDs(ctx context.Context) error {
	props := schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}
	for _, spec := range ClusterSpecs {
		cfg := l.clusters[spec.Name].Config
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{testbed.ClusterPropertyCRDs()}, ErrorIfPathMissing: true}); err != nil {
			return fmt.Errorf("%s: the ClusterProperty CRD: %w", spec.Name, err)
		}
		id, ok := clusterIDs[spec.Name]
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
