package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	// churnServicesEnv, churnChangesEnv and churnWorkersEnv override the churning remote's
	// Services, the quiet remote's changes in each phase and the churning goroutines.
	churnServicesEnv     = "SEMAPHORE_BENCH_CHURN_SERVICES"
	churnChangesEnv      = "SEMAPHORE_BENCH_CHURN_CHANGES"
	churnWorkersEnv      = "SEMAPHORE_BENCH_CHURN_WORKERS"
	defaultChurnServices = 500
	// defaultChurnChanges: 300, so that a p99 is the third-highest delay, not the second.
	defaultChurnChanges = 300
	defaultChurnWorkers = 4
	quietServices       = 50
	// churnWarmUp is how long the churning remote changes before the quiet one is measured,
	// so that the controller's queue is full of its keys by then.
	churnWarmUp = 3 * time.Second
	// mirrorsQueue is the service mirror's queue in its workqueue metrics.
	mirrorsQueue = "service_mirror"
)

// BenchmarkChurningRemote measures whether a remote that churns delays the changes of another:
// two remotes, "quiet" with 50 Services and "churn" with 500, into one local cluster. The quiet
// remote makes 300 endpoint changes at 20 a second, timed until the mirror shows each; then
// again while the churning remote changes its EndpointSlices as fast as 4 unthrottled clients
// can, more than the controller writes at its client's rate limit (200 QPS), so that its
// keys fill the controller's queue. The quiet remote's delays are reported side by side, and
// the controller's processor time per remote change while the other remote churns.
func BenchmarkChurningRemote(b *testing.B) {
	b.StopTimer()
	nChurn := envInt(b, churnServicesEnv, defaultChurnServices)
	nChanges := envInt(b, churnChangesEnv, defaultChurnChanges)
	nWorkers := envInt(b, churnWorkersEnv, defaultChurnWorkers)
	local := testenv.Start(b, testenv.Options{Audit: true}, "local")[0]
	remotes := testenv.Start(b, testenv.Options{}, "quiet", "churn")
	quiet, churn := remotes[0], remotes[1]
	quietSrc := populate(b, quiet, quietServices, map[string]string{mirrorLabel: "true"},
		func(i, e int) string { return fmt.Sprintf("10.1.%d.%d", i, e+1) })
	churnSrc := populate(b, churn, nChurn, map[string]string{mirrorLabel: "true"},
		func(i, e int) string { return fmt.Sprintf("10.2.%d.%d", i/25, (i%25)*10+e+1) })

	measure.Namespaces(b, local, mirrorNS)
	view := watchMirrorNamespace(b, local.Client)
	admin := measure.FreeAdmin(b)
	proc := measure.BinaryReading(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, b.TempDir(),
		local, remotes, mirrorNS, "SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS, admin.Setting())
	n := quietServices + nChurn
	convergence, _ := proc.Converge(b, convergeWait, func() (bool, string) {
		return converged(view, n), fmt.Sprintf("%d of %d services, %d slices complete", view.serviceCount(), n, view.completeSlices())
	})

	// A quiet slice is changed again 2.5 s later (50 slices, 20 changes a second): when its
	// mirror lags more than that, a change of the same endpoint would replace the marker not
	// yet seen, which would then never arrive. Each change of a slice takes the next endpoint,
	// so each marker stays until it is seen.
	quietChanges := func(v *localView, prefix string) {
		measure.Paced(nChanges, changeEvery, func(i int) {
			j, e := i%quietServices, (i/quietServices)%endpoints
			v.changeEndpoint(b, quietSrc, j, e, fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250+1))
		})
		v.latencies.Wait(b, nChanges, proc.Log)
	}

	// Phase 1: the quiet remote alone.
	alone := watchMirrorNamespace(b, local.Client)
	quietChanges(alone, "198.18")

	// Phase 2: the same while the other remote churns.
	withChurn := watchMirrorNamespace(b, local.Client)
	writes0, cpu0 := proc.Writes(b), proc.CPUSeconds(b)
	c := startChurn(b, churnSrc, nWorkers)
	b.Cleanup(func() { c.stop() }) // before the clusters stop, when the benchmark fails
	time.Sleep(churnWarmUp)
	depth := sampleDepth(b, admin)
	quietChanges(withChurn, "198.19")
	maxDepth := depth.stop()
	rate := c.stop()
	writeRate := float64(proc.Writes(b)-writes0) / c.took.Seconds()
	// What a remote's change costs the controller (decoding the watch event, the sync, the
	// write when there is one), both remotes' changes counted: what a hostile remote's flood
	// takes from the processors the data path shares on a small node.
	cpuPerChange := (proc.CPUSeconds(b) - cpu0) / float64(c.changes.Load()+int64(nChanges))

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	a50, a99, aMax := alone.latencies.Percentiles()
	c50, c99, cMax := withChurn.latencies.Percentiles()
	b.ReportMetric(convergence.Seconds(), "converge-s")
	b.ReportMetric(ms(a50), "quiet-p50-ms")
	b.ReportMetric(ms(a99), "quiet-p99-ms")
	b.ReportMetric(ms(c50), "quiet-churn-p50-ms")
	b.ReportMetric(ms(c99), "quiet-churn-p99-ms")
	b.ReportMetric(rate, "churn-changes/s")
	b.ReportMetric(writeRate, "churn-writes/s")
	b.ReportMetric(maxDepth, "churn-queue-depth")
	b.ReportMetric(cpuPerChange*1000, "cpu-ms/remote-change")
	b.ReportMetric(0, "ns/op")
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	fmt.Printf("churning remote: %d quiet Services, %d churning; converged in %v\n", quietServices, nChurn, convergence.Round(time.Millisecond))
	fmt.Printf("churning remote: %d quiet changes at %v intervals alone: p50 %v, p99 %v, max %v\n",
		nChanges, changeEvery, round(a50), round(a99), round(aMax))
	fmt.Printf("churning remote: the same while the other remote made %.0f changes/s (%d clients; controller wrote %.0f/s, queue up to %.0f keys): p50 %v, p99 %v, max %v\n",
		rate, nWorkers, writeRate, maxDepth, round(c50), round(c99), round(cMax))
	fmt.Printf("churning remote: the controller used %.2f ms of processor time per remote change (%.2f of a processor at %.0f changes/s)\n",
		cpuPerChange*1000, cpuPerChange*(rate+float64(nChanges)/c.took.Seconds()), rate)
}

// churning changes a remote's EndpointSlices from several goroutines as fast as the API server
// takes it, until stop.
type churning struct {
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	changes atomic.Int64
	start   time.Time
	took    time.Duration
}

// startChurn starts workers goroutines, each updating its share of the slices of p (with its
// unthrottled client) one after the other, round and round, replacing the first endpoint's
// address.
func startChurn(b *testing.B, p *populated, workers int) *churning {
	client, slices := p.client, p.slices
	c := &churning{done: make(chan struct{}), start: time.Now()}
	for w := range workers {
		c.wg.Go(func() {
			for round := 0; ; round++ {
				for j := w; j < len(slices); j += workers {
					select {
					case <-c.done:
						return
					default:
					}
					s := slices[j]
					s.Endpoints[0].Addresses = []string{fmt.Sprintf("10.3.%d.%d", j/250, round%250+1)}
					out, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{})
					if err != nil {
						b.Errorf("churning %s/%s: %v", s.Namespace, s.Name, err)
						return
					}
					slices[j] = out
					c.changes.Add(1)
				}
			}
		})
	}
	return c
}

// stop stops the churn, once, and returns the changes made per second.
func (c *churning) stop() float64 {
	c.once.Do(func() {
		close(c.done)
		c.wg.Wait()
		c.took = time.Since(c.start)
	})
	return float64(c.changes.Load()) / c.took.Seconds()
}

// depthSampler reads the depth of the mirrors' queue from the binary's metrics every 200 ms.
type depthSampler struct {
	done, stopped chan struct{}
	max           float64
}

func sampleDepth(b *testing.B, admin measure.Admin) *depthSampler {
	const name = "semaphore_service_mirror_workqueue_depth"
	s := &depthSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			samples, err := admin.Metrics(name)
			if err != nil {
				b.Error(err)
				return
			}
			s.max = max(s.max, samples.Sum(name, map[string]string{"name": mirrorsQueue}))
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop stops the sampling and returns the largest depth seen.
func (s *depthSampler) stop() float64 {
	close(s.done)
	<-s.stopped
	return s.max
}
