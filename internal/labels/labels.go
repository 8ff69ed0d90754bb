// Package labels holds the label keys and values Semaphore components share.
package labels

// ManagedBy is the standard label naming the component that owns an object. A component never
// modifies or deletes an object that does not carry its own value here.
const ManagedBy = "app.kubernetes.io/managed-by"

// Component names, used as ManagedBy values, field managers and user agents.
const (
	ServiceMirror = "semaphore-service-mirror"
	Policy        = "semaphore-policy"
	WireGuard     = "semaphore-wireguard"
)

// IsManagedBy reports whether labels mark an object as owned by component.
func IsManagedBy(labels map[string]string, component string) bool {
	return labels[ManagedBy] == component
}
