// Package bench measures semaphore-service-mirror against real API servers: convergence of a
// fresh local cluster on 1,000 remote Services, propagation delay of endpoint changes at steady
// state, writes per change, and the controller's peak memory. Run it with `make bench`.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/testenv"
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

	fast := func(c *testenv.Cluster) kubernetes.Interface {
		cfg := rest.CopyConfig(c.Config)
		cfg.QPS, cfg.Burst = -1, 0
		return kubernetes.NewForConfigOrDie(cfg)
	}
	awsClient := fast(aws)
	if err := local.EnsureNamespace(ctx, mirrorNS); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	remoteSlices := populate(b, aws, awsClient)
	b.Logf("created %d remote Services with %d endpoints each in %v", services, endpoints, time.Since(start).Round(time.Millisecond))

	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	var seen sync.Map // slice name -> latest addresses joined
	var latencies []time.Duration
	var latMu sync.Mutex
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
				latMu.Lock()
				latencies = append(latencies, time.Since(at.(time.Time)))
				latMu.Unlock()
			}
		}
	}
	_, _ = sliceInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }})
	stop := make(chan struct{})
	defer close(stop)
	localFactory.Start(stop)
	localFactory.WaitForCacheSync(stop)

	bin := testenv.BuildBinary(b, "github.com/kube-semaphore/semaphore/components/service-mirror")
	remotesDir := filepath.Join(dir, "remotes")
	testenv.WriteRemoteKubeconfig(b, remotesDir, aws)

	// Phase 1: a fresh local cluster converges on the remote.
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"SEMAPHORE_LOCAL_CLUSTER=local",
		"SEMAPHORE_REMOTES=aws",
		"SEMAPHORE_REMOTES_DIR="+remotesDir,
		"SEMAPHORE_LOCAL_KUBECONFIG="+local.DirectKubeconfig,
		"SEMAPHORE_ADMIN_ADDR=127.0.0.1:0",
		"SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS,
		"SEMAPHORE_LEADER_ELECT_NAMESPACE="+mirrorNS,
		"SEMAPHORE_LOG_LEVEL=warn",
	)
	logFile, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	writesBefore := len(local.WritesBut(b, userAgent))
	b.StartTimer()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for !converged(svcInformer, &seen) {
		if time.Since(t0) > convergeWait {
			b.Fatalf("not converged after %v: %d services, see %s", convergeWait, len(svcInformer.GetStore().List()), logFile.Name())
		}
		time.Sleep(10 * time.Millisecond)
	}
	convergence := time.Since(t0)
	b.StopTimer()
	time.Sleep(2 * time.Second) // let the last watch events arrive before counting
	convergeWrites := len(local.WritesBut(b, userAgent)) - writesBefore

	// Phase 2: at rest, nothing is written.
	rest0 := len(local.WritesBut(b, userAgent))
	time.Sleep(5 * time.Second)
	idleWrites := len(local.WritesBut(b, userAgent)) - rest0

	// Phase 3: steady state, one endpoint change at a time, spread over the Services.
	steady0 := len(local.WritesBut(b, userAgent))
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		latMu.Lock()
		n := len(latencies)
		latMu.Unlock()
		if n == changes {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d changes arrived", n, changes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	steadyWrites := len(local.WritesBut(b, userAgent)) - steady0
	rss := testenv.PeakRSS(b, cmd.Process.Pid)

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	p50 := latencies[len(latencies)/2]
	p99 := latencies[len(latencies)*99/100]
	b.ReportMetric(convergence.Seconds(), "converge-s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(steadyWrites)/changes, "writes/change")
	b.ReportMetric(float64(idleWrites), "idle-writes")
	b.ReportMetric(rss/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(0, "ns/op")
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
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= services {
					return
				}
				ns, name := fmt.Sprintf("team-%d", i%namespaces), fmt.Sprintf("svc-%04d", i)
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{mirrorLabel: "true"}},
					Spec: corev1.ServiceSpec{
						Selector: map[string]string{"app": name},
						Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
					},
				}
				if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
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
				out, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{})
				if err != nil {
					failed.Store(err)
					return
				}
				slices[i] = out
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
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
