// Package bench measures semaphore-policy against real API servers: convergence of a fresh
// local cluster on 5,000 labelled remote pods in 500 sets, the delay from a pod change to its
// set being updated under 50 changes per second, writes made versus changes, writes at rest,
// and the controller's peak memory. Run it with `make bench`.
package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	pods         = 5000
	sets         = 500
	perSet       = pods / sets
	namespaces   = 5
	changeRate   = 50 // pod changes per second
	changeSecs   = 30
	changes      = changeRate * changeSecs
	podLabel     = "policy.semaphore.uw.io/name"
	userAgent    = "semaphore-policy"
	leaseNS      = "semaphore"
	api          = calico.APIv3
	convergeWait = 5 * time.Minute
)

// podIP is the address pod i starts with: 198.18.0.1 to 198.18.19.250.
func podIP(i int) string { return fmt.Sprintf("198.18.%d.%d", i/250, i%250+1) }

// markerIP is the address the k-th change gives a pod: unique, and outside podIP's range.
func markerIP(k int) string { return fmt.Sprintf("198.19.%d.%d", k/250, k%250+1) }

// setOf is the set (label value) and namespace of pod i.
func setOf(i int) (ns, set string) {
	s := i % sets
	return fmt.Sprintf("team-%d", s%namespaces), fmt.Sprintf("set-%03d", s)
}

// pendingChange is a change whose marker address the local sets do not show yet.
type pendingChange struct {
	at  time.Time
	set string // the value of the set's name label
}

func BenchmarkPolicy(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	crds := testenv.CRDs("policy")
	clusters := testenv.Start(b, testenv.Options{Audit: true, CRDDirs: []string{crds}}, "local", "gcp")
	local, gcp := clusters[0], clusters[1]
	ctx := context.Background()

	gcpClient := measure.Client(gcp)
	measure.Namespaces(b, local, leaseNS)
	start := time.Now()
	remotePods := populate(b, gcp, gcpClient)
	b.Logf("created %d remote pods in %d sets in %v", pods, sets, time.Since(start).Round(time.Millisecond))

	// The local view: an informer on the GlobalNetworkSets, as a user's kubectl --watch would be.
	var (
		pending   sync.Map // marker net -> pendingChange
		latencies measure.Latencies
		misplaced atomic.Int64 // markers seen in a set other than their pod's
	)
	record := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		now := time.Now()
		nets, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "nets")
		for _, n := range nets {
			if v, ok := pending.LoadAndDelete(n); ok {
				c := v.(pendingChange)
				if u.GetLabels()[netset.LabelName] != c.set {
					misplaced.Add(1)
				}
				latencies.Add(now.Sub(c.at))
			}
		}
	}
	res, _ := calico.Resource(api)
	setInformer := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(local.Config), 0).ForResource(res).Informer()
	_, _ = setInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }})
	stop := make(chan struct{})
	defer close(stop)
	go setInformer.Run(stop)
	cache.WaitForCacheSync(stop, setInformer.HasSynced)

	proc := measure.Binary(b, "github.com/kube-semaphore/semaphore/components/policy", userAgent, dir, local, gcp, leaseNS,
		"SEMAPHORE_POLICY_CALICO_API="+api)

	// Phase 1: a fresh local cluster converges on the remote.
	convergence, convergeWrites := proc.Converge(b, convergeWait, func() (bool, string) {
		n, complete := completeSets(setInformer.GetStore())
		return complete == sets, fmt.Sprintf("%d sets, %d of them complete", n, complete)
	})

	// Phase 2: at rest, nothing is written.
	idleWrites := proc.AtRest(b)

	// Phase 3: steady state, changeRate pod changes per second, each giving one pod a new
	// address; consecutive changes go to different sets (a stride coprime with the pod count).
	steady0 := proc.Writes(b)
	phase := time.Now()
	measure.Paced(changes, time.Second/changeRate, func(k int) {
		i := (k * 37) % pods
		p := remotePods[i].DeepCopy()
		marker := markerIP(k)
		p.Status.PodIP, p.Status.PodIPs = marker, []corev1.PodIP{{IP: marker}}
		_, set := setOf(i)
		pending.Store(marker+"/32", pendingChange{at: time.Now(), set: set})
		out, err := gcpClient.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		remotePods[i] = out
	})
	changePhase := time.Since(phase)
	latencies.Wait(b, changes, proc.Log)
	time.Sleep(2 * time.Second)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)
	if m := misplaced.Load(); m > 0 {
		b.Errorf("%d marker addresses showed up in a set other than their pod's", m)
	}

	p50, p99, maxLat := latencies.Percentiles()
	measure.Report(b, convergence, &latencies, float64(steadyWrites)/changes, idleWrites, rss)
	b.ReportMetric(float64(convergeWrites), "converge-writes")
	fmt.Printf("policy: %d remote pods in %d sets converged in %v with %d writes (%d sets)\n",
		pods, sets, convergence.Round(time.Millisecond), convergeWrites, sets)
	fmt.Printf("policy: steady state, %d pod changes in %v (%.1f/s): p50 %v, p99 %v, max %v; %d writes for %d changes (%.2f per change)\n",
		changes, changePhase.Round(time.Millisecond), float64(changes)/changePhase.Seconds(),
		p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), maxLat.Round(100*time.Microsecond),
		steadyWrites, changes, float64(steadyWrites)/changes)
	fmt.Printf("policy: writes at rest over 5s: %d; controller peak RSS %.1f MiB\n", idleWrites, rss/(1<<20))
	if convergence > 10*time.Second || p99 > 500*time.Millisecond || steadyWrites > changes || idleWrites > 0 {
		fmt.Printf("policy: aims missed (converge < 10s, p99 < 500ms, writes <= changes, none at rest); controller log: %s\n", proc.Log)
	}
}

// completeSets counts the sets in store and those of them holding all their pods' addresses.
func completeSets(store cache.Store) (n, complete int) {
	for _, o := range store.List() {
		nets, _, _ := unstructured.NestedStringSlice(o.(*unstructured.Unstructured).Object, "spec", "nets")
		n++
		if len(nets) == perSet {
			complete++
		}
	}
	return n, complete
}

// populate creates the labelled remote pods with their addresses and returns them.
func populate(b *testing.B, gcp *testenv.Cluster, client kubernetes.Interface) []*corev1.Pod {
	ctx := context.Background()
	for n := range namespaces {
		measure.Namespaces(b, gcp, fmt.Sprintf("team-%d", n))
	}
	out := make([]*corev1.Pod, pods)
	measure.InParallel(b, pods, func(i int) error {
		ns, set := setOf(i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: ns, Labels: map[string]string{podLabel: set, "app": set}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
		p, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = podIP(i), []corev1.PodIP{{IP: podIP(i)}}
		out[i], err = client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	return out
}
