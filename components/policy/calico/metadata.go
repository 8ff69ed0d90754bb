package calico

import (
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MetadataAnnotation is where the Calico API server keeps a projectcalico.org/v3 object's
// labels and annotations when it stores the object as its crd.projectcalico.org/v1 resource
// (since Calico v3.28): the stored object itself carries none of them. Calico's own clients
// (Felix, calicoctl) read the labels from there, over the stored object's own.
const MetadataAnnotation = "projectcalico.org/metadata"

// LiftLabels is an informer transform for sets read through crd.projectcalico.org/v1: it gives
// an object that MetadataAnnotation describes the labels Calico reads for it (its own, with
// the annotation's over them), so that a set the Calico API server stored is seen with the
// labels it was written with: the same set whichever of the two groups it is read from. A set
// written through crd.projectcalico.org/v1 has no such annotation and is left as it is.
func LiftLabels(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	lifted := metadataLabels(u.GetAnnotations()[MetadataAnnotation])
	if len(lifted) == 0 {
		return obj, nil
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, lifted)
	u.SetLabels(labels)
	return u, nil
}

// metadataLabels are the labels in the value of MetadataAnnotation; none when there is none,
// or when it does not parse (Calico could not read it either: the object keeps only its own).
func metadataLabels(raw string) map[string]string {
	var meta struct {
		Labels map[string]string `json:"labels"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &meta) != nil {
		return nil
	}
	return meta.Labels
}
