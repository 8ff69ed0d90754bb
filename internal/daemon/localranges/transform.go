package localranges

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The informers keep of each object only what its ranges are read from (and what the cache
// needs: name and resource version), so watching every Node of a large cluster costs little.

// keepRanges is the typed informers' transform.
func keepRanges(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return &corev1.Node{
			ObjectMeta: keptMeta(o.ObjectMeta),
			Spec:       corev1.NodeSpec{PodCIDRs: o.Spec.PodCIDRs},
			Status:     corev1.NodeStatus{Addresses: o.Status.Addresses},
		}, nil
	case *networkingv1.ServiceCIDR:
		return &networkingv1.ServiceCIDR{
			ObjectMeta: keptMeta(o.ObjectMeta),
			Spec:       o.Spec,
		}, nil
	}
	return obj, nil // a tombstone
}

// keepBlockCIDR is the IPAM blocks' transform.
func keepBlockCIDR(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	kept := &unstructured.Unstructured{Object: map[string]any{}}
	kept.SetAPIVersion(u.GetAPIVersion())
	kept.SetKind(u.GetKind())
	kept.SetName(u.GetName())
	kept.SetResourceVersion(u.GetResourceVersion())
	if cidr, found, _ := unstructured.NestedString(u.Object, "spec", "cidr"); found {
		_ = unstructured.SetNestedField(kept.Object, cidr, "spec", "cidr")
	}
	return kept, nil
}

func keptMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion, UID: m.UID}
}
