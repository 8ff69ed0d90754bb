package uninstall_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// DeleteOwned deletes, in every namespace, exactly the objects that carry the component's
// managed-by label: not another component's, not one without the label; a resource the cluster
// does not serve has nothing to delete.
func TestDeleteOwnedDeletesOnlyTheComponentsObjects(t *testing.T) {
	c := testenv.Start(t, testenv.Options{}, "local")[0]
	ctx := context.Background()
	for _, ns := range []string{"one", "two"} {
		if err := c.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		for name, owner := range map[string]string{"ours": "semaphore-test", "theirs": "someone-else", "unlabelled": ""} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			if owner != "" {
				cm.Labels = map[string]string{ownership.ManagedBy: owner}
			}
			if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	n, err := uninstall.DeleteOwned(ctx, dyn, uninstall.Owned{Resource: configMaps, Component: "semaphore-test"})
	if err != nil || n != 2 {
		t.Fatalf("DeleteOwned = %d, %v; want 2 deleted", n, err)
	}
	for _, ns := range []string{"one", "two"} {
		list, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				names = append(names, cm.Name)
			}
		}
		if len(names) != 2 || names[0] != "theirs" || names[1] != "unlabelled" {
			t.Errorf("ConfigMaps left in %s: %v, want theirs and unlabelled", ns, names)
		}
	}
	unserved := schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}
	if n, err := uninstall.DeleteOwned(ctx, dyn, uninstall.Owned{Resource: unserved, Component: "semaphore-test"}); err != nil || n != 0 {
		t.Errorf("DeleteOwned of a resource not served = %d, %v; want 0, nil", n, err)
	}
}
