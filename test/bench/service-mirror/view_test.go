package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

// localView is the mirror namespace as a user's kubectl --watch sees it: the Services, the
// endpoints of each slice, when the first slice appeared, and the latency of each change
// marked with markChange.
type localView struct {
	services  cache.SharedIndexInformer
	slices    sync.Map // slice name -> endpoints
	pending   sync.Map // marker address -> change time
	firstSeen atomic.Int64
	latencies measure.Latencies
	// nServices and complete count the Services and the slices with every endpoint as events
	// arrive (a deleted one no longer counts): a convergence check polls them every few milliseconds, and listing 20,000
	// objects each time would take the processors the API servers and the controller share.
	nServices, complete atomic.Int64
}

// watchMirrorNamespace starts the local view, synced, until the benchmark ends.
func watchMirrorNamespace(b *testing.B, client kubernetes.Interface) *localView {
	return watchNamespace(b, client, mirrorNS)
}

// watchNamespace starts a view of namespace, synced, until the benchmark ends.
func watchNamespace(b *testing.B, client kubernetes.Interface, namespace string) *localView {
	return watchSelected(b, client, informers.WithNamespace(namespace))
}

// watchSelected starts a view of the Services and slices opts select, synced, until the
// benchmark ends.
func watchSelected(b *testing.B, client kubernetes.Interface, opts ...informers.SharedInformerOption) *localView {
	v := &localView{}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	v.services = factory.Core().V1().Services().Informer()
	_, _ = v.services.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.nServices.Add(1) },
		DeleteFunc: func(any) { v.nServices.Add(-1) },
	})
	record := func(obj any) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		v.firstSeen.CompareAndSwap(0, time.Now().UnixNano())
		old, seen := v.slices.Swap(s.Name, len(s.Endpoints))
		was, is := seen && old.(int) == endpoints, len(s.Endpoints) == endpoints
		switch {
		case is && !was:
			v.complete.Add(1)
		case was && !is:
			v.complete.Add(-1)
		}
		for _, e := range s.Endpoints {
			if at, ok := v.pending.LoadAndDelete(e.Addresses[0]); ok {
				v.latencies.Add(time.Since(at.(time.Time)))
			}
		}
	}
	forget := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if old, seen := v.slices.LoadAndDelete(s.Name); seen && old.(int) == endpoints {
				v.complete.Add(-1)
			}
		}
	}
	_, _ = factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(
		cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }, DeleteFunc: forget})
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return v
}

// completeSlices counts the slices that hold every endpoint.
func (v *localView) completeSlices() int { return int(v.complete.Load()) }

// serviceCount is the number of Services in the view.
func (v *localView) serviceCount() int { return int(v.nServices.Load()) }

// change replaces the last endpoint of source slice j of p with marker, as changeEndpoint does.
func (v *localView) change(b *testing.B, p *populated, j int, marker string) {
	v.changeEndpoint(b, p, j, endpoints-1, marker)
}

// changeEndpoint replaces endpoint e of source slice j of p with marker and notes when; the
// view times the change when a local slice shows the marker.
func (v *localView) changeEndpoint(b *testing.B, p *populated, j, e int, marker string) {
	s := p.slices[j]
	s.Endpoints[e].Addresses = []string{marker}
	v.pending.Store(marker, time.Now())
	out, err := p.client.DiscoveryV1().EndpointSlices(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p.slices[j] = out
}

// populated is a cluster populate filled: its labelled Services, one slice of endpoints each,
// and an unthrottled client to change them with. The client reaches the API server directly,
// not through the cluster's proxy: what is measured is the controller, not the proxy.
type populated struct {
	*testenv.Cluster
	client kubernetes.Interface
	svcs   []*corev1.Service
	slices []*discoveryv1.EndpointSlice
}

// populate creates n Services with labels in c, spread over the namespaces team-*, each with
// one slice of endpoints at addr(i, e).
func populate(b *testing.B, c *testenv.Cluster, n int, labels map[string]string, addr func(i, e int) string) *populated {
	ctx := context.Background()
	client := measure.Client(c)
	for ns := range namespaces {
		measure.Namespaces(b, c, fmt.Sprintf("team-%d", ns))
	}
	svcs := make([]*corev1.Service, n)
	slices := make([]*discoveryv1.EndpointSlice, n)
	measure.InParallel(b, n, func(i int) error {
		ns, name := fmt.Sprintf("team-%d", i%namespaces), fmt.Sprintf("svc-%04d", i)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": name},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		var err error
		if svcs[i], err = client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for e := range endpoints {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{addr(i, e)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			})
		}
		slices[i], err = client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	return &populated{Cluster: c, client: client, svcs: svcs, slices: slices}
}
