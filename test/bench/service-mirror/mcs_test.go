package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	mcsinformers "sigs.k8s.io/mcs-api/pkg/client/informers/externalversions"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/measure"
)

const (
	mcsServices = 500
	mcsChanges  = 100
	// mcsReconciles and mcsQueue are the controller's metrics that say it has caught up.
	mcsReconciles = "semaphore_service_mirror_mcs_reconcile_total"
	mcsQueue      = "service_mirror_mcs"
)

// BenchmarkMultiClusterServices measures the Multi-Cluster Services API: 500 Services in the
// local cluster and two remotes, each exported with a ServiceExport in all three, with one
// slice of 10 endpoints in each cluster. The clusters are the global services' benchmark's. A
// bare client writing the same 2,500 objects (ServiceImports, derived Services, imported
// slices) at the controller's default rate limit is the reference; the controller, a separate
// process, converges from empty, then 100 remote endpoint changes are counted in the audit
// log, and it is restarted against imports in sync.
func BenchmarkMultiClusterServices(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	crds := filepath.Join(testbed.RepoRoot(), "charts", "semaphore", "charts", "service-mirror", "crds")
	clusters := testenv.Start(b, testenv.Options{Audit: true, CRDDirs: []string{crds}}, globalClusters...)
	local := clusters[0]

	start := time.Now()
	sources := make([]*exporting, len(clusters))
	for ci, c := range clusters {
		sources[ci] = exportAll(b, populate(b, c, mcsServices, nil,
			func(i, e int) string { return fmt.Sprintf("10.%d.%d.%d", ci+1, i/25, (i%25)*10+e+1) }))
	}
	b.Logf("created and exported %d Services with %d endpoints each in each of %d clusters in %v",
		mcsServices, endpoints, len(clusters), time.Since(start).Round(time.Millisecond))

	// The reference: the same objects, written by a bare client, then removed.
	bare := bareImports(b, local, sources)

	measure.Namespaces(b, local, mirrorNS)
	// The local view: informers on what the controller writes in every namespace.
	view := watchImports(b, local, metav1.NamespaceAll)
	proc := measure.BinaryReading(b, "github.com/kube-semaphore/semaphore/components/service-mirror", userAgent, dir,
		local, clusters[1:], mirrorNS, "SEMAPHORE_MIRROR_NAMESPACE="+mirrorNS, "SEMAPHORE_MCS_ENABLED=true")

	// Phase 1: a fresh local cluster imports the three clusters' exports.
	var r mcsRun
	writes0 := len(local.WritesBut(b, userAgent))
	t0 := time.Now()
	r.convergence, r.convergeWrites = proc.Converge(b, convergeWait, view.converged)
	r.first = time.Duration(view.firstSeen.Load() - t0.UnixNano())
	r.byVerb = writesByVerb(local.WritesBut(b, userAgent)[writes0:])

	// Phase 2: at rest, nothing is written.
	r.idleWrites = proc.AtRest(b)

	// Phase 3: one endpoint change at a time in a remote slice, spread over the Services and
	// the two remotes.
	steady0 := proc.Writes(b)
	measure.Paced(mcsChanges, changeEvery, func(i int) {
		c, j := 1+i%2, (i*37)%mcsServices
		view.change(b, sources[c].populated, j, fmt.Sprintf("10.200.%d.%d", i/250, i%250+1))
	})
	view.latencies.Wait(b, mcsChanges, proc.Log)
	time.Sleep(2 * time.Second)
	r.writesPerChange = float64(proc.Writes(b)-steady0) / mcsChanges
	r.rss = proc.PeakRSS(b)

	// Phase 4: restarted against imports in sync. Caught up may come before the remotes have
	// synced (the local objects alone enqueue every Service): its writes are counted 5 s later.
	before := len(local.WritesBut(b, userAgent))
	next, restart := restartUntil(b, local, proc, func(a measure.Admin) bool {
		return queueCaughtUp(a, mcsServices, mcsReconciles, mcsQueue)
	})
	next.AtRest(b)
	r.restart, r.restartWrites = restart, local.WritesBut(b, userAgent)[before:]
	r.report(b, bare, &view.latencies)
}

// mcsRun holds the figures of BenchmarkMultiClusterServices.
type mcsRun struct {
	convergence, first time.Duration
	convergeWrites     int
	byVerb             string
	idleWrites         int
	writesPerChange    float64
	rss                float64
	restart            handover
	// restartWrites are those of the restart and the 5 s after it.
	restartWrites testenv.AuditEvents
}

// report reports the figures next to bare, the reference's time, and prints them.
func (r mcsRun) report(b *testing.B, bare time.Duration, l *measure.Latencies) {
	ratio := r.convergence.Seconds() / bare.Seconds()
	p50, p99, _ := l.Percentiles()
	measure.Report(b, r.convergence, l, r.writesPerChange, r.idleWrites, r.rss)
	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(r.first.Seconds(), "first-write-s")
	b.ReportMetric(float64(r.convergeWrites), "converge-writes")
	b.ReportMetric(float64(len(r.restartWrites)), "restart-writes")
	b.ReportMetric(r.restart.caughtUp.Seconds(), "restart-caught-up-s")
	slices := mcsServices * len(globalClusters)
	objects := 2*mcsServices + slices
	fmt.Printf("mcs: %d exported Services x %d clusters x %d endpoints imported in %v (first imported slice seen at %v) with %d writes for %d objects and %d local ServiceExports (%s)\n",
		mcsServices, len(globalClusters), endpoints, r.convergence.Round(time.Millisecond), r.first.Round(time.Millisecond), r.convergeWrites, objects, mcsServices, r.byVerb)
	fmt.Printf("mcs: bare client (QPS %d, burst %d, %d goroutines) wrote the %d objects (%d ServiceImports, %d derived Services, %d slices) in %v; controller/bare %.2f (aim <= 1.5)\n",
		bareQPS, bareBurst, bareWorkers, objects, mcsServices, mcsServices, slices, bare.Round(time.Millisecond), ratio)
	fmt.Printf("mcs: steady state, %d remote changes at %v intervals: p50 %v, p99 %v, %.2f writes per change\n",
		mcsChanges, changeEvery, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), r.writesPerChange)
	fmt.Printf("mcs: writes at rest over 5s: %d; restart against %d imports in sync: leading after %v, caught up after %v, %d writes until 5s later%s; controller peak RSS %.1f MiB\n",
		r.idleWrites, mcsServices, r.restart.lead.Round(time.Millisecond), r.restart.caughtUp.Round(time.Millisecond),
		len(r.restartWrites), writeKinds(r.restartWrites), r.rss/(1<<20))
}

// exporting is a cluster populate filled whose Services are all exported, and their exports.
type exporting struct {
	*populated
	exports []*mcsv1beta1.ServiceExport
}

// exportAll creates a ServiceExport of every Service of p.
func exportAll(b *testing.B, p *populated) *exporting {
	client := mcsClient(b, measure.Unthrottled(p.Cluster))
	e := &exporting{populated: p, exports: make([]*mcsv1beta1.ServiceExport, len(p.svcs))}
	measure.InParallel(b, len(p.svcs), func(i int) error {
		se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: p.svcs[i].Namespace, Name: p.svcs[i].Name}}
		var err error
		e.exports[i], err = client.MulticlusterV1beta1().ServiceExports(se.Namespace).Create(context.Background(), se, metav1.CreateOptions{})
		return err
	})
	return e
}

// mcsClient is an MCS client of cfg, made as the controller makes its own.
func mcsClient(b *testing.B, cfg *rest.Config) mcsclient.Interface {
	client, err := mcscontroller.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// bareImports writes the objects the controller will write, made by package mcs from the same
// sources for Services of the scratch namespace, as bareWrite does, and returns the time it
// took. A view watches them as the controller's are watched.
func bareImports(b *testing.B, local *testenv.Cluster, sources []*exporting) time.Duration {
	measure.Namespaces(b, local, bareNS)
	watchImports(b, local, bareNS)
	want := make([]bareObjects, mcsServices)
	for i := range want {
		k := mcs.Key{Namespace: bareNS, Name: sources[0].svcs[i].Name}
		var exports []mcs.Export
		for _, s := range sources {
			exports = append(exports, mcs.Export{Cluster: s.Name, Created: s.exports[i].CreationTimestamp.Time, Service: s.svcs[i]})
		}
		imp, _ := mcs.Merge(exports)
		want[i].svc = mcs.DerivedService(k, imp)
		want[i].imported = func(derived *corev1.Service) *mcsv1beta1.ServiceImport { return mcs.ServiceImport(k, imp, derived) }
		for _, s := range sources {
			want[i].slices = append(want[i].slices, mcs.EndpointSlices(k, imp, s.Name, s.Name, s.slices[i:i+1])...)
		}
	}
	took, _ := bareWrite(b, local, want)
	return took
}

// importView is what the controller writes for exported Services as a user's kubectl --watch
// sees it: the derived Services and imported slices (a localView), and the ServiceImports.
type importView struct {
	*localView
	imports cache.SharedIndexInformer
}

// watchImports starts a view of the objects of multi-cluster services (those labelled with
// the name of one) in namespace, or in every namespace, synced, until the benchmark ends: not
// the exported Services and their slices.
func watchImports(b *testing.B, local *testenv.Cluster, namespace string) *importView {
	ofService := func(o *metav1.ListOptions) { o.LabelSelector = mcsv1beta1.LabelServiceName }
	v := &importView{localView: watchSelected(b, local.Client, informers.WithNamespace(namespace), informers.WithTweakListOptions(ofService))}
	factory := mcsinformers.NewSharedInformerFactoryWithOptions(mcsClient(b, local.Config), 0,
		mcsinformers.WithNamespace(namespace), mcsinformers.WithTweakListOptions(ofService))
	v.imports = factory.Multicluster().V1beta1().ServiceImports().Informer()
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return v
}

// converged reports whether every ServiceImport has its derived Service's addresses and every
// imported slice holds its endpoints, and how far it got.
func (v *importView) converged() (bool, string) {
	withIPs := 0
	for _, o := range v.imports.GetStore().List() {
		if len(o.(*mcsv1beta1.ServiceImport).Spec.IPs) > 0 {
			withIPs++
		}
	}
	complete, slices := v.completeSlices(), mcsServices*len(globalClusters)
	return withIPs == mcsServices && complete >= slices, fmt.Sprintf("%d of %d ServiceImports with IPs, %d derived Services, %d of %d slices",
		withIPs, mcsServices, v.serviceCount(), complete, slices)
}
