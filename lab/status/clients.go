package status

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// How the status reads the lab: the clusters through their direct kubeconfigs (never cut), the
// controllers through their admin ports forwarded to this machine's loopback; every read short.

// clientConfig is the client configuration of kubeconfig, for the short reads of collect.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	return cfg, nil
}

func clientsetOf(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// listWithSlices lists the Services of the semaphore namespace that selector selects, in the
// cluster kubeconfig reaches, each made a T by of with its own EndpointSlices.
func listWithSlices[T any](ctx context.Context, kubeconfig, selector string, of func(svc *corev1.Service, slices []discoveryv1.EndpointSlice) T) ([]T, error) {
	client, err := clientsetOf(kubeconfig)
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: selector}
	svcs, err := client.CoreV1().Services(layout.SemaphoreNamespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	eps, err := client.DiscoveryV1().EndpointSlices(layout.SemaphoreNamespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []T
	for i := range svcs.Items {
		out = append(out, of(&svcs.Items[i], slicesOf(svcs.Items[i].Name, eps.Items)))
	}
	return out, nil
}

// slicesOf are the EndpointSlices of all that belong to Service name.
func slicesOf(name string, all []discoveryv1.EndpointSlice) []discoveryv1.EndpointSlice {
	var out []discoveryv1.EndpointSlice
	for _, s := range all {
		if s.Labels[discoveryv1.LabelServiceName] == name {
			out = append(out, s)
		}
	}
	return out
}

// servicePorts are a Service's ports as the status prints them: name:port/protocol.
func servicePorts(svc *corev1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
	}
	return out
}

// Scrape reads the samples of the metrics starting with prefix (all for "") from the admin
// server at admin (a controller's, forwarded to this machine), giving up after timeout.
func Scrape(ctx context.Context, admin, prefix string, timeout time.Duration) ([]testbed.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return testbed.Scrape(ctx, http.DefaultClient, "http://"+admin+"/metrics", prefix)
}
