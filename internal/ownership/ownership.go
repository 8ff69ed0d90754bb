// Package ownership holds the names of the components and the labels that say which component
// owns a local object and what it made the object from.
package ownership

// ManagedBy is the standard label naming the component that owns an object. A component never
// modifies or deletes an object that does not carry its own value here.
const ManagedBy = "app.kubernetes.io/managed-by"

// Component names, used as ManagedBy values, field managers and user agents.
const (
	ServiceMirror = "semaphore-service-mirror"
	Policy        = "semaphore-policy"
	WireGuard     = "semaphore-wireguard"
)

// Components are the components' short names (their full names without "semaphore-"), as their
// subcharts, dashboards and alert files are named, in the order everything lists them.
var Components = []string{"service-mirror", "policy", "wireguard"}

// IsManagedBy reports whether labels mark an object as owned by component.
func IsManagedBy(labels map[string]string, component string) bool {
	return labels[ManagedBy] == component
}

// Source identifies what a component made a local object from: an object, or a group of
// objects, in one namespace of one remote cluster.
type Source struct {
	Cluster, Namespace, Name string
}

func (s Source) String() string { return s.Cluster + "/" + s.Namespace + "/" + s.Name }

// SourceKeys are the label keys under which a component records the Source of the objects it
// makes, and its own ManagedBy value.
type SourceKeys struct {
	Component, Cluster, Namespace, Name string
}

// Labels are the labels of an object that k's component made from s.
func (k SourceKeys) Labels(s Source) map[string]string {
	return map[string]string{
		ManagedBy:   k.Component,
		k.Cluster:   s.Cluster,
		k.Namespace: s.Namespace,
		k.Name:      s.Name,
	}
}

// SourceOf reads the Source recorded in an object's labels; false when any part is missing.
func (k SourceKeys) SourceOf(l map[string]string) (Source, bool) {
	s := Source{Cluster: l[k.Cluster], Namespace: l[k.Namespace], Name: l[k.Name]}
	return s, s.Cluster != "" && s.Namespace != "" && s.Name != ""
}
