package mirror

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// ByServiceName is the name of the index IndexByServiceName computes.
const ByServiceName = "service"

// IndexByServiceName indexes an EndpointSlice by <namespace>/<name> of the Service it belongs
// to (its kubernetes.io/service-name label), the way to a source Service's slices.
func IndexByServiceName(obj any) ([]string, error) {
	m, err := reconcile.MetaOf(obj)
	if err != nil {
		return nil, err
	}
	if name := m.GetLabels()[discoveryv1.LabelServiceName]; name != "" {
		return []string{m.GetNamespace() + "/" + name}, nil
	}
	return nil, nil
}
