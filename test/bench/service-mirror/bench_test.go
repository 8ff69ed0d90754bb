// Package bench measures semaphore-service-mirror against real API servers: convergence of a
// fresh local cluster on 1,000 remote Services (BenchmarkServiceMirror) and on 500 global
// services in three clusters next to a bare client writing the same objects
// (BenchmarkGlobalServices), propagation delay of endpoint changes at steady state, writes per
// change, and the controller's peak memory. Run it with `make bench`.
package bench

import (
	"context"
	"fmt"
	"sync"
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

	"github.com/kube-semaphore/semaphore/internal/testenv"
	"github.com/kube-semaphore/semaphore/test/measure"
)

const (
	services     = 1000
	endpoints    = 10
	namespaces   = 10
	changes      = 200
	changeEvery  = 50 * time.Millisecond
	mirrorNS     = "semaphore"
	userAgent    = "semaphore-service-mirror"
	mirrorLabel  = "mirror.semaphore.uw.io/mirror-service"
	convergeWait = 5 * time.Minute
)

func BenchmarkServiceMirror(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	clusters := testenv.Start(b, testenv.Options{Audit: true}, "local", "aws")
	local, aws := clusters[0], clusters[1]
	ctx := context.Background()

	awsClient := kubernetes.NewForConfigOrDie(measure.Unthrottled(aws))
	if err := local.EnsureNamespace(ctx, mirrorNS); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	remoteSlices := populate(b, aws, awsClient)
	b.Logf("created %d remote Services with %d endpoints each in %v", services, endpoints, time.Since(start).Round(time.Millisecond))

	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	var seen sync.Map // slice name -> latest addresses joined
	var latencies measure.Latencies
	pending := sync.Map{} // marker address -> change time
	localFactory := informers.NewSharedInformerFactoryWithOptions(local.Client, 0, informers.WithNamespace(mirrorNS))
	sliceInformer := localFactory.Discovery().V1().EndpointSlices().Informer()
	svcInformer := localFactory.Core().V1().Services().Informer()
	record := func(obj any) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		seen.Store(s.Name, len(s.Endpoints))
		for _, e := range s.Endpoints {
			if at, ok := pending.LoadAndDelete(e.Addresses[0]); ok {
				latencies.Add(time.Since(at.(time.Time)))
			}
		}
	}
	_, _ = sliceInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }})
	stop := make(chan struct{})
	defer close(stop)
	localFactory.Start(stop)
	localFactory.WaitForCacheSync(stop)

	proc := measure.Binary(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir, local, aws, mirrorNS,
		"SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS)

	// Phase 1: a fresh local cluster converges on the remote.
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		return converged(svcInformer, &seen), fmt.Sprintf("%d services", len(svcInformer.GetStore().List()))
	})

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: steady state, one endpoint change at a time, spread over the Services.
	steady0 := proc.Writes(b)
	for i := range changes {
		s := remoteSlices[(i*37)%len(remoteSlices)]
		marker := fmt.Sprintf("198.19.%d.%d", i/250, i%250+1)
		s.Endpoints[endpoints-1].Addresses = []string{marker}
		pending.Store(marker, time.Now())
		out, err := awsClient.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		remoteSlices[(i*37)%len(remoteSlices)] = out
		time.Sleep(changeEvery)
	}
	latencies.Wait(b, changes, proc.Log)
	time.Sleep(2 * time.Second)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)

	p50, p99, _ := latencies.Percentiles()
	measure.Report(b, convergence, &latencies, float64(steadyWrites)/changes, idleWrites, rss)
	fmt.Printf("service-mirror: %d Services x %d endpoints converged in %v with %d writes (%d objects)\n",
		services, endpoints, convergence.Round(time.Millisecond), convergeWrites, 2*services)
	fmt.Printf("service-mirror: steady state, %d changes at %v intervals: p50 %v, p99 %v, %.2f writes per change\n",
		changes, changeEvery, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), float64(steadyWrites)/changes)
	fmt.Printf("service-mirror: writes at rest over 5s: %d; controller peak RSS %.1f MiB\n", idleWrites, rss/(1<<20))
}

// populate creates the remote Services, each with one slice of endpoints, and returns the slices.
func populate(b *testing.B, aws *testenv.Cluster, client kubernetes.Interface) []*discoveryv1.EndpointSlice {
	ctx := context.Background()
	for n := range namespaces {
		if err := aws.EnsureNamespace(ctx, fmt.Sprintf("team-%d", n)); err != nil {
			b.Fatal(err)
		}
	}
	slices := make([]*discoveryv1.EndpointSlice, services)
	measure.InParallel(b, services, func(i int) error {
		ns, name := fmt.Sprintf("team-%d", i%namespaces), fmt.Sprintf("svc-%04d", i)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{mirrorLabel: "true"}},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": name},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		for e := range endpoints {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("198.18.%d.%d", i/25, (i%25)*10+e+1)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			})
		}
		var err error
		slices[i], err = client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	return slices
}

func converged(svcInformer cache.SharedIndexInformer, seen *sync.Map) bool {
	if len(svcInformer.GetStore().List()) < services {
		return false
	}
	complete := 0
	seen.Range(func(_, v any) bool {
		if v.(int) == endpoints {
			complete++
		}
		return true
	})
	return complete >= services
}
