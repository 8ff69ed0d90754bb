package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	// remotesEnv and remoteServicesEnv override the number of remotes and of Services in each:
	// small values make a quick run while the benchmark itself is worked on.
	remotesEnv            = "SEMAPHORE_BENCH_REMOTES"
	remoteServicesEnv     = "SEMAPHORE_BENCH_REMOTE_SERVICES"
	defaultRemotes        = 20
	defaultRemoteServices = 500
	// remotesConvergeWait is longer than convergeWait: 20,000 writes at 200 QPS take 100 s
	// at best, and convergence has been slower than linear at that size.
	remotesConvergeWait = 10 * time.Minute
	// remoteChanges per phase: 300, so that a p99 is the third-highest delay, not the second.
	remoteChanges = 300
	// slowLatency delays every chunk between the controller and the slow remote, each way.
	slowLatency = 300 * time.Millisecond
	// slowChangeEvery: one change in the slow remote per this many in the others, so that it
	// is busy while the others are measured.
	slowChangeEvery = 20
	// flapEvery is how long the flapping remote is cut off, then reachable, in turn.
	flapEvery = 500 * time.Millisecond
)

// BenchmarkManyRemotes measures the service mirror reading many remotes (20 of 500 Services of
// 10 endpoints each by default): convergence next to a bare client writing the same objects,
// writes, the cost of each remote in memory, goroutines and connections, and whether one
// remote behind a slow link, or one whose link flaps, delays the changes of the others.
func BenchmarkManyRemotes(b *testing.B) {
	b.StopTimer()
	nr, ns := envInt(b, remotesEnv, defaultRemotes), envInt(b, remoteServicesEnv, defaultRemoteServices)
	if nr < 2 {
		b.Fatalf("%s=%d: the slow remote needs others to compare with", remotesEnv, nr)
	}
	local, remotes := startRemotes(b, nr)
	sources := populateRemotes(b, remotes, ns)
	bare, bareCPU := bareMirrors(b, local, sources)

	measure.Namespaces(b, local, mirrorNS)
	view := watchMirrorNamespace(b, local.Client)
	admin := measure.FreeAdmin(b)
	proc := measure.BinaryReading(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, b.TempDir(),
		local, remotes, mirrorNS, "SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS, admin.Setting())

	// Phase 1: a fresh local cluster converges on every remote.
	n := nr * ns
	cpu0 := measure.MachineCPUSeconds(b)
	convergence, convergeWrites := proc.Converge(b, remotesConvergeWait, func() (bool, string) {
		return converged(view, n), fmt.Sprintf("%d of %d services, %d slices complete", view.serviceCount(), n, view.completeSlices())
	})
	convergeCPU, controllerCPU := measure.MachineCPUSeconds(b)-cpu0, proc.CPUSeconds(b)
	// Phase 2: at rest, nothing is written; what each remote costs is read then.
	idleWrites := proc.AtRest(b)
	cost := measureCost(b, admin, proc.Pid(), local, remotes)

	// Phase 3: changes in all remotes but the first, then again with the first one slow, then
	// with it flapping.
	steady0 := proc.Writes(b)
	iso := isolation(b, local, sources, admin, proc.Log)
	steadyWrites := proc.Writes(b) - steady0
	rss := proc.PeakRSS(b)
	// The flapping remote's mirrors are kept while it is cut off (and nothing is written for
	// it when it comes back: writes per change stay at 1).
	if !converged(view, n) {
		b.Errorf("after r01 flapped, %d of %d mirror Services, %d slices complete", view.serviceCount(), n, view.completeSlices())
	}

	ratio := convergence.Seconds() / bare.Seconds()
	perChange := float64(steadyWrites) / float64(3*remoteChanges+slowChanges)
	measure.Report(b, convergence, iso.baseline, perChange, idleWrites, rss)
	reportRemotes(b, nr, bare, ratio, convergeWrites, cost, rss, iso)
	fmt.Printf("many remotes: %d remotes x %d Services x %d endpoints converged in %v with %d writes (want %d)\n",
		nr, ns, endpoints, convergence.Round(time.Millisecond), convergeWrites, 2*n)
	fmt.Printf("many remotes: bare client (QPS %d, burst %d, %d goroutines) wrote the %d objects in %v; controller/bare %.2f (aim <= 1.5)\n",
		bareQPS, bareBurst, bareWorkers, 2*n, bare.Round(time.Millisecond), ratio)
	// Where the time goes: on a machine whose processors are busy throughout, time follows
	// the processor time the API servers, the controller and the benchmark need together.
	fmt.Printf("many remotes: processors busy %.0f s while the bare client wrote (%.2f of %d), %.0f s while the controller converged (%.2f), %.1f s of it the controller's\n",
		bareCPU, bareCPU/bare.Seconds(), runtime.NumCPU(), convergeCPU, convergeCPU/convergence.Seconds(), controllerCPU)
	// Memory and goroutines per remote are totals divided by the remotes, the fixed part
	// included; connections are counted to each remote.
	fmt.Printf("many remotes: writes at rest over 5s: %d; peak RSS %.1f MiB (%.2f MiB/remote); %.0f goroutines (%.1f/remote); connections per remote %.1f (max %d), to local %d\n",
		idleWrites, rss/(1<<20), rss/(1<<20)/float64(nr), cost.goroutines, cost.goroutines/float64(nr), cost.meanConns(), cost.maxConns(), cost.localConns)
	iso.print(perChange)
}

// envInt is the positive integer in environment variable name, or def when it is unset.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// startRemotes starts the local cluster, audited so that writes can be counted, and nr remotes
// r01, r02, ..., which need no audit log.
func startRemotes(b *testing.B, nr int) (*testenv.Cluster, []*testenv.Cluster) {
	names := make([]string, nr)
	for i := range names {
		names[i] = fmt.Sprintf("r%02d", i+1)
	}
	local := testenv.Start(b, testenv.Options{Audit: true}, "local")[0]
	return local, testenv.Start(b, testenv.Options{}, names...)
}

// populateRemotes fills each remote with ns labelled Services, the same names in every remote
// (their mirrors' names hold the remote's) but distinct endpoint addresses.
func populateRemotes(b *testing.B, remotes []*testenv.Cluster, ns int) []*populated {
	start := time.Now()
	sources := make([]*populated, len(remotes))
	for ri, r := range remotes {
		sources[ri] = populate(b, r, ns, map[string]string{mirrorLabel: "true"},
			func(i, e int) string { return fmt.Sprintf("10.%d.%d.%d", ri+1, i/25, (i%25)*10+e+1) })
	}
	b.Logf("created %d Services with %d endpoints each in each of %d remotes in %v", ns, endpoints, len(remotes), time.Since(start).Round(time.Millisecond))
	return sources
}

// bareMirrors writes the objects the controller will write, made by package mirror from the
// same sources, as bareWrite does. A view watches them as the controller's are watched: the
// API server sends each to a watcher in both runs.
func bareMirrors(b *testing.B, local *testenv.Cluster, sources []*populated) (time.Duration, float64) {
	measure.Namespaces(b, local, bareNS)
	watchNamespace(b, local.Client, bareNS)
	var want []bareObjects
	for _, r := range sources {
		for i, svc := range r.svcs {
			src := mirror.Source{Cluster: r.Name, Namespace: svc.Namespace, Name: svc.Name}
			want = append(want, bareObjects{svc: mirror.Service(src, bareNS, svc), slices: mirror.EndpointSlices(src, bareNS, r.slices[i:i+1])})
		}
	}
	return bareWrite(b, local, want)
}

// bareObjects are a Service and its slices as the controller writes them.
type bareObjects struct {
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
	// imported, for a multi-cluster service, makes its ServiceImport from svc, its derived
	// Service, as created (with its addresses); nil for any other Service.
	imported func(derived *corev1.Service) *mcsv1beta1.ServiceImport
}

// bareWrite writes objs into a scratch namespace of local with a client as the controller's
// (rate limit, parallelism), each Service first, then its ServiceImport if any, then its
// slices, and returns the time from the first write to the last
// acknowledged, and the processor time the machine was busy meanwhile. The objects are then
// deleted, before the controller starts.
func bareWrite(b *testing.B, local *testenv.Cluster, objs []bareObjects) (time.Duration, float64) {
	ctx := context.Background()
	measure.Namespaces(b, local, bareNS)
	cfg := rest.CopyConfig(local.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = bareQPS, bareBurst, bareAgent
	client := kubernetes.NewForConfigOrDie(cfg)
	imports := mcsClient(b, cfg) // with a rate limit of its own, as the controller's
	t0, cpu0 := time.Now(), measure.MachineCPUSeconds(b)
	measure.InWorkers(b, bareWorkers, len(objs), func(i int) error {
		svc, err := client.CoreV1().Services(bareNS).Create(ctx, objs[i].svc, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if objs[i].imported != nil {
			if _, err := imports.MulticlusterV1beta1().ServiceImports(bareNS).Create(ctx, objs[i].imported(svc), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		for _, s := range objs[i].slices {
			if _, err := client.DiscoveryV1().EndpointSlices(bareNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	took, busy := time.Since(t0), measure.MachineCPUSeconds(b)-cpu0

	unthrottled, unthrottledImports := measure.Client(local), mcsClient(b, measure.Unthrottled(local))
	measure.InParallel(b, len(objs), func(i int) error {
		if objs[i].imported != nil {
			if err := unthrottledImports.MulticlusterV1beta1().ServiceImports(bareNS).Delete(ctx, objs[i].imported(objs[i].svc).Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		for _, s := range objs[i].slices {
			if err := unthrottled.DiscoveryV1().EndpointSlices(bareNS).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		return unthrottled.CoreV1().Services(bareNS).Delete(ctx, objs[i].svc.Name, metav1.DeleteOptions{})
	})
	return took, busy
}

// cost is what the remotes cost the controller at rest.
type cost struct {
	goroutines float64
	conns      []int // established connections to each remote's proxy
	localConns int
}

func (c cost) meanConns() float64 {
	total := 0
	for _, n := range c.conns {
		total += n
	}
	return float64(total) / float64(len(c.conns))
}

func (c cost) maxConns() int {
	m := 0
	for _, n := range c.conns {
		m = max(m, n)
	}
	return m
}

// measureCost reads the goroutines of the binary (process pid) from its metrics at admin and
// counts its connections to each remote (through the remote's proxy) and to the local API
// server.
func measureCost(b *testing.B, admin measure.Admin, pid int, local *testenv.Cluster, remotes []*testenv.Cluster) cost {
	var c cost
	c.goroutines = admin.MustMetrics(b, "go_goroutines").Sum("go_goroutines", nil)
	byPort := connectionsByPeerPort(b, pid)
	for _, r := range remotes {
		c.conns = append(c.conns, byPort[serverPort(b, r.Kubeconfig)])
	}
	// The binary reaches the local API server directly, not through its proxy.
	c.localConns = byPort[serverPort(b, local.DirectKubeconfig)]
	return c
}

// connectionsByPeerPort counts the established TCP connections of process pid by the port of
// their peer: its sockets' inodes, looked up in the kernel's connection table.
func connectionsByPeerPort(b *testing.B, pid int) map[int]int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	counts := map[int]int{}
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st ... inode; st 01 is ESTABLISHED.
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "01" || !inodes[f[9]] {
				continue
			}
			_, hex, _ := strings.Cut(f[2], ":")
			if port, err := strconv.ParseUint(hex, 16, 16); err == nil {
				counts[int(port)]++
			}
		}
	}
	return counts
}

// serverPort is the port of the API server address in the kubeconfig file at path.
func serverPort(b *testing.B, path string) int {
	port, err := strconv.Atoi(serverURL(b, path).Port())
	if err != nil {
		b.Fatal(err)
	}
	return port
}

// serverURL is the URL of the API server in the kubeconfig file at path.
func serverURL(b *testing.B, path string) *url.URL {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// requests counts API requests to one remote.
type requests struct{ all, failed float64 }

// requestsTo counts the API requests the binary with admin server admin made to the API server
// of the kubeconfig file at path: all, and those that got no answer.
func requestsTo(b *testing.B, admin measure.Admin, path string) requests {
	const name = "semaphore_service_mirror_client_requests_total"
	samples := admin.MustMetrics(b, name)
	host := serverURL(b, path).Host
	return requests{samples.Sum(name, map[string]string{"host": host}), samples.Sum(name, map[string]string{"host": host, "code": "<error>"})}
}

// isolated are the delays of the isolation phase: changes in the other remotes before, while
// the first is slow and while it flaps, and the slow remote's own changes.
type isolated struct {
	baseline, withSlow, slow, withFlapping *measure.Latencies
	// flapRequests are the requests to the flapping remote while it flapped.
	flapRequests requests
}

// slowChanges are the changes made in the slow remote, one per slowChangeEvery in the others.
const slowChanges = (remoteChanges + slowChangeEvery - 1) / slowChangeEvery

// isolation makes remoteChanges endpoint changes spread over every remote but the first, then
// slows the first one and makes as many again, with a few in the slow remote among them, then
// as many again while the first one is cut off and restored every flapEvery. Each batch has a
// view of its own, so that each has its own delays.
func isolation(b *testing.B, local *testenv.Cluster, sources []*populated, admin measure.Admin, log string) isolated {
	// The changes are made directly, not through the proxies (populated): the change itself is
	// not slowed, only its mirroring.
	slowed := sources[0]
	baseline := watchMirrorNamespace(b, local.Client)
	spreadChanges(b, baseline, sources[1:], "198.18", nil)
	baseline.latencies.Wait(b, remoteChanges, log)

	slowed.SetLatency(slowLatency)
	others, slow := watchMirrorNamespace(b, local.Client), watchMirrorNamespace(b, local.Client)
	spreadChanges(b, others, sources[1:], "198.19", func(i int) {
		if i%slowChangeEvery == 0 {
			k := i / slowChangeEvery
			slow.change(b, slowed, (k*37)%len(slowed.slices), fmt.Sprintf("198.20.0.%d", k+1))
		}
	})
	others.latencies.Wait(b, remoteChanges, log)
	slow.latencies.Wait(b, slowChanges, log)
	slowed.SetLatency(0)

	flapping := watchMirrorNamespace(b, local.Client)
	before := requestsTo(b, admin, slowed.Kubeconfig)
	stopFlapping := flap(b, slowed.Cluster, flapEvery)
	spreadChanges(b, flapping, sources[1:], "198.21", nil)
	flapping.latencies.Wait(b, remoteChanges, log)
	stopFlapping()
	after := requestsTo(b, admin, slowed.Kubeconfig)
	time.Sleep(2 * time.Second) // what the controller does once the remote is back
	return isolated{
		baseline: &baseline.latencies, withSlow: &others.latencies, slow: &slow.latencies, withFlapping: &flapping.latencies,
		flapRequests: requests{after.all - before.all, after.failed - before.failed},
	}
}

// flap cuts the remote's link and restores it every period until the returned function is
// called, which leaves it restored.
func flap(b *testing.B, remote *testenv.Cluster, period time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		up := true
		for {
			select {
			case <-done:
				if err := remote.SetReachable(true); err != nil {
					b.Error(err)
				}
				return
			case <-ticker.C:
				up = !up
				if err := remote.SetReachable(up); err != nil {
					b.Error(err)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// spreadChanges makes remoteChanges endpoint changes through v, 50 ms apart, spread over
// sources and their Services, each marked with an address under prefix; between is called
// after each, when set.
func spreadChanges(b *testing.B, v *localView, sources []*populated, prefix string, between func(i int)) {
	measure.Paced(remoteChanges, changeEvery, func(i int) {
		r := sources[i%len(sources)]
		v.change(b, r, (i*37)%len(r.slices), fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250+1))
		if between != nil {
			between(i)
		}
	})
}

// reportRemotes reports this benchmark's figures beyond measure.Report's.
func reportRemotes(b *testing.B, nr int, bare time.Duration, ratio float64, convergeWrites int, c cost, rss float64, iso isolated) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	_, p99With, _ := iso.withSlow.Percentiles()
	_, p99Base, _ := iso.baseline.Percentiles()
	slow50, _, slowMax := iso.slow.Percentiles()
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(convergeWrites), "converge-writes")
	b.ReportMetric(rss/(1<<20)/float64(nr), "RSS-MiB/remote")
	b.ReportMetric(c.goroutines, "goroutines")
	b.ReportMetric(c.goroutines/float64(nr), "goroutines/remote")
	b.ReportMetric(c.meanConns(), "conns/remote")
	b.ReportMetric(ms(p99Base), "p99-baseline-ms")
	b.ReportMetric(ms(p99With), "p99-with-slow-remote-ms")
	b.ReportMetric(ms(slow50), "slow-remote-p50-ms")
	b.ReportMetric(ms(slowMax), "slow-remote-max-ms")
	_, p99Flapping, _ := iso.withFlapping.Percentiles()
	b.ReportMetric(ms(p99Flapping), "p99-with-flapping-remote-ms")
}

// print prints the isolation phase's figures, one line each.
func (iso isolated) print(writesPerChange float64) {
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	b50, b99, _ := iso.baseline.Percentiles()
	w50, w99, _ := iso.withSlow.Percentiles()
	s50, _, sMax := iso.slow.Percentiles()
	fmt.Printf("many remotes: %d changes in the other remotes at %v intervals: p50 %v, p99 %v; with r01 behind %v each way: p50 %v, p99 %v\n",
		remoteChanges, changeEvery, round(b50), round(b99), slowLatency, round(w50), round(w99))
	f50, f99, _ := iso.withFlapping.Percentiles()
	fmt.Printf("many remotes: %d changes in the slow remote arrived: p50 %v, max %v\n", slowChanges, round(s50), round(sMax))
	fmt.Printf("many remotes: %d changes in the other remotes with r01 cut off and restored every %v (%.0f requests to r01 meanwhile, %.0f unanswered): p50 %v, p99 %v; %.2f writes per change in all\n",
		remoteChanges, flapEvery, iso.flapRequests.all, iso.flapRequests.failed, round(f50), round(f99), writesPerChange)
}
