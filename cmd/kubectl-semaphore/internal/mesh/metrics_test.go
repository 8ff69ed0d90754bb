package mesh_test

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
)

// staticMetrics serves fixed metrics text by pod name, for pods without a kubelet behind them.
type staticMetrics map[string]string

func (s staticMetrics) Metrics(_ context.Context, pod *corev1.Pod, _ int) ([]byte, error) {
	text, ok := s[pod.Name]
	if !ok {
		return nil, errors.New("no metrics for pod " + pod.Name)
	}
	return []byte(text), nil
}
