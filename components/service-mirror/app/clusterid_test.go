package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

var clusterProperties = schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}

// setClusterID sets the ClusterProperty cluster.clusterset.k8s.io of c to id, creating it (and
// deleting it at the end of the test) when c has none.
func setClusterID(t *testing.T, c *testenv.Cluster, id string) {
	t.Helper()
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	props, ctx := client.Resource(clusterProperties), context.Background()
	prop, err := props.Get(ctx, mcs.ClusterIDProperty, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		prop = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": mcs.ClusterIDProperty}, "spec": map[string]any{"value": id},
		}}
		if _, err := props.Create(ctx, prop, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = props.Delete(context.Background(), mcs.ClusterIDProperty, metav1.DeleteOptions{}) })
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(prop.Object, id, "spec", "value"); err != nil {
		t.Fatal(err)
	}
	if _, err := props.Update(ctx, prop, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectRefused waits until the cluster_id_refused gauge of each cluster is as want says.
func expectRefused(t *testing.T, r *running, want map[string]bool) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("refused cluster IDs %v", want), func() error {
		for cluster, refused := range want {
			v := metricValue(t, r.App.Registry, "semaphore_service_mirror_mcs_cluster_id_refused", map[string]string{"source_cluster": cluster})
			if (v == 1) != refused {
				return fmt.Errorf("%s: cluster_id_refused %v", cluster, v)
			}
		}
		return nil
	})
}

// A cluster with a ClusterProperty cluster.clusterset.k8s.io is known by that ID in the
// source-cluster label of its imported endpoints (the <clusterid> of their DNS names); one
// that claims another cluster's name keeps its own, and the refusal is counted. A new ID
// relabels that cluster's slices, one write each; a restart writes nothing.
func TestImportedEndpointsCarryTheClustersIDs(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	setClusterID(t, local, "local-eu1")
	setClusterID(t, aws, "aws-eu1")
	setClusterID(t, gcp, "aws")
	exportService(t, local, ns, "api", nil, "198.18.1.1")
	exportService(t, aws, ns, "api", nil, "198.18.2.1")
	exportService(t, gcp, ns, "api", nil, "198.18.3.1")
	r := start(t, cfg)

	k := mcs.Key{Namespace: ns, Name: "api"}
	expectImport(t, k, map[string][]string{"local-eu1": {"198.18.1.1"}, "aws-eu1": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})
	expectRefused(t, r, map[string]bool{"local": false, "aws": false, "gcp": true})
	expectNoMCSWrites(t, ns, "at rest")

	before := len(mcsWrites(t, ns))
	setClusterID(t, gcp, "gcp-eu1")
	expectImport(t, k, map[string][]string{"local-eu1": {"198.18.1.1"}, "aws-eu1": {"198.18.2.1"}, "gcp-eu1": {"198.18.3.1"}})
	expectRefused(t, r, map[string]bool{"gcp": false})
	expectNoMCSWrites(t, ns, "after gcp's new ID")
	if got := mcsWrites(t, ns)[before:]; len(got) != 1 {
		t.Errorf("gcp's new ID made %d writes, want 1 (its one slice):%s", len(got), got)
	}

	restartWritesNothing(t, r, cfg, "semaphore_service_mirror_mcs_endpoints", "gcp", 1, func() testenv.AuditEvents { return mcsWrites(t, ns) })
	for _, c := range []*testenv.Cluster{local, aws, gcp} {
		unexport(t, c, ns, "api")
	}
	expectNoImport(t, k)
}
