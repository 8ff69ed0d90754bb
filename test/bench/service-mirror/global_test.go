package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/testenv"
	"github.com/kube-semaphore/semaphore/test/measure"
)

const (
	globalServices = 500
	globalChanges  = 100
	// The bare reference is a client as the controller has it by default: 200 QPS, burst
	// 400, as many goroutines as the controller has workers.
	bareQPS     = 200
	bareBurst   = 400
	bareWorkers = 8
	bareNS      = "bare-reference"
	bareAgent   = "semaphore-bench-bare"
)

// globalClusters are the clusters of the global services benchmark, local first. The
// definition used is aws's: the first in name order.
var globalClusters = []string{"local", "aws", "gcp"}

// BenchmarkGlobalServices measures global services: 500 Services present in the local cluster
// and two remotes with one slice of 10 endpoints in each. A bare client writing the same 2,000
// objects at the controller's default rate limit is the reference; the controller, a separate
// process, converges from empty, then 100 remote endpoint changes are counted in the audit log.
func BenchmarkGlobalServices(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	clusters := testenv.Start(b, testenv.Options{Audit: true}, globalClusters...)
	local := clusters[0]
	ctx := context.Background()

	start := time.Now()
	svcs := make([][]*corev1.Service, len(clusters))
	sources := make([][]*discoveryv1.EndpointSlice, len(clusters))
	for ci, c := range clusters {
		svcs[ci], sources[ci] = populateGlobal(b, c, ci)
	}
	b.Logf("created %d global Services with %d endpoints each in each of %d clusters in %v",
		globalServices, endpoints, len(clusters), time.Since(start).Round(time.Millisecond))

	// The reference: the same objects, written by a bare client, then removed.
	bare := bareReference(b, local, svcs, sources)

	if err := local.EnsureNamespace(ctx, mirrorNS); err != nil {
		b.Fatal(err)
	}
	// The local view: an informer on the mirror namespace, as a user's kubectl --watch would be.
	var seen sync.Map // slice name -> endpoints
	var latencies measure.Latencies
	var pending sync.Map // marker address -> change time
	var firstSeen atomic.Int64
	localFactory := informers.NewSharedInformerFactoryWithOptions(local.Client, 0, informers.WithNamespace(mirrorNS))
	sliceInformer := localFactory.Discovery().V1().EndpointSlices().Informer()
	svcInformer := localFactory.Core().V1().Services().Informer()
	record := func(obj any) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		firstSeen.CompareAndSwap(0, time.Now().UnixNano())
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

	proc := measure.BinaryReading(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir,
		local, clusters[1:], mirrorNS, "SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS)

	// Phase 1: a fresh local cluster converges on the three clusters' global services.
	writes0 := len(local.WritesBut(b, userAgent))
	t0 := time.Now()
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		return globalConverged(svcInformer, &seen)
	})
	first := time.Duration(firstSeen.Load() - t0.UnixNano())
	byVerb := writesByVerb(local.WritesBut(b, userAgent)[writes0:])

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: one endpoint change at a time in a remote slice, spread over the services and
	// the two remotes.
	remoteClients := []kubernetes.Interface{
		kubernetes.NewForConfigOrDie(measure.Unthrottled(clusters[1])),
		kubernetes.NewForConfigOrDie(measure.Unthrottled(clusters[2])),
	}
	steady0 := proc.Writes(b)
	for i := range globalChanges {
		r := 1 + i%2
		j := (i * 37) % globalServices
		s := sources[r][j]
		marker := fmt.Sprintf("10.200.%d.%d", i/250, i%250+1)
		s.Endpoints[endpoints-1].Addresses = []string{marker}
		pending.Store(marker, time.Now())
		out, err := remoteClients[r-1].DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sources[r][j] = out
		time.Sleep(changeEvery)
	}
	latencies.Wait(b, globalChanges, proc.Log)
	time.Sleep(2 * time.Second)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)

	ratio := convergence.Seconds() / bare.Seconds()
	p50, p99, _ := latencies.Percentiles()
	measure.Report(b, convergence, &latencies, float64(steadyWrites)/globalChanges, idleWrites, rss)
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(first.Seconds(), "first-write-s")
	b.ReportMetric(float64(convergeWrites), "converge-writes")
	objects := globalServices * (1 + len(clusters))
	fmt.Printf("global services: %d Services x %d clusters x %d endpoints converged in %v (first global slice seen at %v) with %d writes for %d objects (%s)\n",
		globalServices, len(clusters), endpoints, convergence.Round(time.Millisecond), first.Round(time.Millisecond), convergeWrites, objects, byVerb)
	fmt.Printf("global services: bare client (QPS %d, burst %d, %d goroutines) wrote the %d objects in %v; controller/bare %.2f (aim <= 1.5)\n",
		bareQPS, bareBurst, bareWorkers, objects, bare.Round(time.Millisecond), ratio)
	fmt.Printf("global services: steady state, %d remote changes at %v intervals: p50 %v, p99 %v, %.2f writes per change\n",
		globalChanges, changeEvery, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), float64(steadyWrites)/globalChanges)
	fmt.Printf("global services: writes at rest over 5s: %d; controller peak RSS %.1f MiB\n", idleWrites, rss/(1<<20))
}

// populateGlobal creates the global Services of cluster number ci, each with one slice of
// endpoints whose addresses are the cluster's own, and returns them and their slices.
func populateGlobal(b *testing.B, c *testenv.Cluster, ci int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(measure.Unthrottled(c))
	for n := range namespaces {
		if err := c.EnsureNamespace(ctx, fmt.Sprintf("team-%d", n)); err != nil {
			b.Fatal(err)
		}
	}
	svcs := make([]*corev1.Service, globalServices)
	eps := make([]*discoveryv1.EndpointSlice, globalServices)
	measure.InParallel(b, globalServices, func(i int) error {
		ns, name := fmt.Sprintf("team-%d", i%namespaces), fmt.Sprintf("svc-%04d", i)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{global.LabelGlobalService: "true"}},
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
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", ci+1, i/25, (i%25)*10+e+1)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			})
		}
		eps[i], err = client.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	return svcs, eps
}

// bareReference writes the objects the controller will write, made by package global from the
// same sources, into a scratch namespace of local with a client as the controller's (rate
// limit, parallelism), and returns the time from the first write to the last acknowledged.
// The objects are then deleted, before the controller starts.
func bareReference(b *testing.B, local *testenv.Cluster, svcs [][]*corev1.Service, sources [][]*discoveryv1.EndpointSlice) time.Duration {
	ctx := context.Background()
	if err := local.EnsureNamespace(ctx, bareNS); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(local.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = bareQPS, bareBurst, bareAgent
	client := kubernetes.NewForConfigOrDie(cfg)
	type objects struct {
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
	}
	want := make([]objects, globalServices)
	for i := range globalServices {
		k := global.Key{Namespace: svcs[0][i].Namespace, Name: svcs[0][i].Name}
		want[i].svc = global.Service(k, bareNS, global.DefinitionOf(globalClusters[1], svcs[1][i]))
		for ci, name := range globalClusters {
			want[i].slices = append(want[i].slices, global.EndpointSlices(k, bareNS, name, sources[ci][i:i+1], nil)...)
		}
	}

	t0 := time.Now()
	measure.InWorkers(b, bareWorkers, globalServices, func(i int) error {
		if _, err := client.CoreV1().Services(bareNS).Create(ctx, want[i].svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		for _, s := range want[i].slices {
			if _, err := client.DiscoveryV1().EndpointSlices(bareNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	took := time.Since(t0)

	unthrottled := kubernetes.NewForConfigOrDie(measure.Unthrottled(local))
	measure.InParallel(b, globalServices, func(i int) error {
		for _, s := range want[i].slices {
			if err := unthrottled.DiscoveryV1().EndpointSlices(bareNS).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		return unthrottled.CoreV1().Services(bareNS).Delete(ctx, want[i].svc.Name, metav1.DeleteOptions{})
	})
	return took
}

// globalConverged reports whether every global Service follows the definition used (aws's)
// and every global slice holds its endpoints, and how far it got.
func globalConverged(svcInformer cache.SharedIndexInformer, seen *sync.Map) (bool, string) {
	services := 0
	for _, o := range svcInformer.GetStore().List() {
		if o.(*corev1.Service).Annotations[global.AnnotationDefinitionFrom] == globalClusters[1] {
			services++
		}
	}
	complete := 0
	seen.Range(func(_, v any) bool {
		if v.(int) == endpoints {
			complete++
		}
		return true
	})
	done := services == globalServices && complete >= globalServices*len(globalClusters)
	return done, fmt.Sprintf("%d of %d Services, %d of %d slices", services, globalServices, complete, globalServices*len(globalClusters))
}

// writesByVerb summarises writes as "create services 500, ..." in a fixed order.
func writesByVerb(events testenv.AuditEvents) string {
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Verb+" "+e.ObjectRef.Resource]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
