package uninstall

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Owned names objects of one resource that component may have made in namespace ("" for every
// namespace, or for a cluster-scoped resource).
type Owned struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Component string
}

// DeleteOwned deletes every object of o.Resource in o.Namespace that carries o.Component's
// managed-by label, and returns how many it deleted. Each delete is conditional on the UID it
// listed: an object replaced meanwhile is an error, and the caller's next pass lists it again.
// A resource the cluster
// does not serve (a CRD that is not installed) has nothing to delete.
func DeleteOwned(ctx context.Context, dyn dynamic.Interface, o Owned) (int, error) {
	selector := labels.SelectorFromSet(labels.Set{ownership.ManagedBy: o.Component}).String()
	client := dyn.Resource(o.Resource)
	list, err := client.Namespace(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("listing %s: %w", o.Resource.Resource, err)
	}
	deleted := 0
	for _, item := range list.Items {
		uid := item.GetUID()
		err := client.Namespace(item.GetNamespace()).Delete(ctx, item.GetName(), metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid},
		})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return deleted, fmt.Errorf("deleting %s %s/%s: %w", o.Resource.Resource, item.GetNamespace(), item.GetName(), err)
		default:
			deleted++
		}
	}
	return deleted, nil
}

// DeleteLease deletes the leader-election Lease namespace/name; an absent one is no error.
func DeleteLease(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	err := client.CoordinationV1().Leases(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Lease %s/%s: %w", namespace, name, err)
	}
	return nil
}
