// Package calico holds the small part of Calico's API that semaphore-policy writes: the
// GlobalNetworkSet, in either of the API groups Calico serves it from.
//
// The projectcalico.org/api Go module is not available to us, so the type is defined here and
// objects are read and written through the dynamic client as unstructured data.
package calico

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API groups GlobalNetworkSets are served from.
const (
	// APIv3 is served by the Calico API server (an aggregated API): what users normally install.
	APIv3 = "projectcalico.org/v3"
	// APICRD is Calico's own CRDs, for clusters without the Calico API server.
	APICRD = "crd.projectcalico.org/v1"
)

// Kind is the kind of a GlobalNetworkSet in both groups.
const Kind = "GlobalNetworkSet"

// Resource returns the GroupVersionResource of GlobalNetworkSets in api (APIv3 or APICRD).
func Resource(api string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(api)
	if err != nil || (api != APIv3 && api != APICRD) {
		return schema.GroupVersionResource{}, fmt.Errorf("%q is not %s or %s", api, APIv3, APICRD)
	}
	return gv.WithResource("globalnetworksets"), nil
}

// GlobalNetworkSet is a cluster-wide named set of networks that Calico policies select by label.
type GlobalNetworkSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GlobalNetworkSetSpec `json:"spec,omitempty"`
}

// GlobalNetworkSetSpec lists the set's networks in CIDR notation.
type GlobalNetworkSetSpec struct {
	Nets []string `json:"nets,omitempty"`
}

// FromUnstructured converts an object read through the dynamic client.
func FromUnstructured(u *unstructured.Unstructured) (*GlobalNetworkSet, error) {
	var s GlobalNetworkSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil, fmt.Errorf("GlobalNetworkSet %s: %w", u.GetName(), err)
	}
	return &s, nil
}

// ToUnstructured converts a set for writing through the dynamic client of api.
func ToUnstructured(s *GlobalNetworkSet, api string) (*unstructured.Unstructured, error) {
	s = s.DeepCopy()
	s.APIVersion, s.Kind = api, Kind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	// The converter writes an empty creationTimestamp as null, which the API server rejects
	// on some paths; leave it out.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// DeepCopy returns a deep copy of s.
func (s *GlobalNetworkSet) DeepCopy() *GlobalNetworkSet {
	out := &GlobalNetworkSet{TypeMeta: s.TypeMeta}
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Nets = append([]string(nil), s.Spec.Nets...)
	return out
}
