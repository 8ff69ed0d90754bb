package multiremote_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/multiremote"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// synced records the keys a controller synced.
type synced struct {
	mu   sync.Mutex
	keys []string
}

func (s *synced) sync(_ context.Context, key string) (reconcile.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, key)
	return reconcile.Success, nil
}

func (s *synced) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.keys, key)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newController(t *testing.T, s *synced, cfg multiremote.Config[string]) (*multiremote.Controller[string], *remote.Health) {
	t.Helper()
	f := metrics.NewFactory(prometheus.NewRegistry(), "test")
	log := slog.New(slog.DiscardHandler)
	health := remote.NewHealth(f, time.Hour, log)
	cfg.Queue, cfg.Sync, cfg.Log, cfg.Health = "test", s.sync, log, health
	cfg.Counters.Reconcile = reconcile.NewMetrics(f, "one key")
	if cfg.Remote == nil {
		cfg.Remote = func(k string) string { r, _, _ := cut(k); return r }
	}
	return multiremote.New(cfg), health
}

// cut splits a "remote/name" key.
func cut(k string) (remoteName, name string, ok bool) {
	for i := range k {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// informers stands for a factory of informers whose caches sync when the test says so. Like a
// real factory, it starts its informers once however often it is started.
type informers struct {
	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	synced  bool
}

func (i *informers) Start(<-chan struct{}) { i.once.Do(func() { close(i.started) }) }
func (i *informers) Shutdown()             {}

func (i *informers) hasSynced() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.synced
}

func (i *informers) sync() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.synced = true
}

func TestRemoteIsEnqueuedOnceItsCachesSynced(t *testing.T) {
	s := &synced{}
	var c *multiremote.Controller[string]
	c, health := newController(t, s, multiremote.Config[string]{
		OnRemoteSynced: func(r *multiremote.Remote) { c.Queue.Add(r.Name + "/a") },
	})
	health.Add("aws", func(context.Context) error { return nil })
	r := c.AddRemote("aws")
	inf := &informers{started: make(chan struct{})}
	r.Watch(inf, inf.hasSynced)
	var handled []string
	h := r.Handler(func(obj any) { handled = append(handled, obj.(string)) })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	defer func() { cancel(); <-done }()

	<-inf.started
	h.OnAdd("before", true)
	if r.Ready() || s.has("aws/a") {
		t.Fatal("a remote is ready, or its keys synced, before its caches synced")
	}
	inf.sync()
	eventually(t, "the remote's keys to be synced", func() bool { return s.has("aws/a") })
	if !r.Ready() {
		t.Error("the remote is not ready after its caches synced")
	}
	h.OnUpdate("old", "after")
	h.OnDelete("gone")
	if want := []string{"after", "gone"}; !slices.Equal(handled, want) {
		t.Errorf("the handler saw %v, want %v: nothing before the remote is ready, the new object of an update", handled, want)
	}
	if !c.LocalSynced() {
		t.Error("a controller without local caches reports them not synced")
	}
}

// Warm starts the informers, local and remote, and nothing else: no key is synced until Run,
// which then finds the caches synced and syncs the remote's keys at once.
func TestWarmFillsTheCachesBeforeTheWorkersRun(t *testing.T) {
	s := &synced{}
	var c *multiremote.Controller[string]
	c, health := newController(t, s, multiremote.Config[string]{
		OnRemoteSynced: func(r *multiremote.Remote) { c.Queue.Add(r.Name + "/a") },
	})
	health.Add("aws", func(context.Context) error { return nil })
	local := &informers{started: make(chan struct{})}
	c.WatchLocal(local, local.hasSynced)
	r := c.AddRemote("aws")
	remoteInf := &informers{started: make(chan struct{})}
	r.Watch(remoteInf, remoteInf.hasSynced)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Warm(ctx)
	for name, inf := range map[string]*informers{"local": local, "remote": remoteInf} {
		select {
		case <-inf.started:
		default:
			t.Fatalf("Warm did not start the %s informers", name)
		}
	}
	local.sync()
	remoteInf.sync()
	if r.Ready() || s.has("aws/a") {
		t.Fatal("before Run, the remote is ready or its keys synced: Warm starts only the informers")
	}

	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	defer func() { cancel(); <-done }()
	eventually(t, "the remote's keys to be synced", func() bool { return s.has("aws/a") })
}

// The queue is fair between remotes: a remote with a thousand keys queued does not hold up
// another's one key, which is synced within the first two.
func TestQuietRemoteIsNotHeldUpByAChurningOne(t *testing.T) {
	s := &synced{}
	c, _ := newController(t, s, multiremote.Config[string]{OnRemoteSynced: func(*multiremote.Remote) {}})
	for i := range 1000 {
		c.Queue.Add(fmt.Sprintf("churn/%d", i))
	}
	c.Queue.Add("quiet/a")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	defer func() { cancel(); <-done }()

	eventually(t, "the quiet remote's key to be synced", func() bool { return s.has("quiet/a") })
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.keys, "quiet/a"); i > 1 {
		t.Errorf("the quiet remote's key was synced %dth, after %d keys of the churning remote", i+1, i)
	}
}

func TestLocalObjectsOfRemovedRemotesAreEnqueuedAtStart(t *testing.T) {
	s := &synced{}
	local := []string{"gone/x", "aws/y"}
	var enqueued []string
	var mu sync.Mutex
	var c *multiremote.Controller[string]
	c, health := newController(t, s, multiremote.Config[string]{
		OnRemoteSynced: func(*multiremote.Remote) {},
		EnqueueLocal: func(match func(string) bool) {
			for _, k := range local {
				if match(k) {
					mu.Lock()
					enqueued = append(enqueued, k)
					mu.Unlock()
					c.Queue.Add(k)
				}
			}
		},
	})
	health.Add("aws", func(context.Context) error { return nil })
	c.AddRemote("aws")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	defer func() { cancel(); <-done }()

	eventually(t, "both local objects to be synced", func() bool { return s.has("gone/x") && s.has("aws/y") })
	mu.Lock()
	defer mu.Unlock()
	// The orphan at start; the remote's own once it synced (a remote without informers has).
	if want := []string{"gone/x", "aws/y"}; !slices.Equal(enqueued, want) {
		t.Errorf("enqueued %v, want %v", enqueued, want)
	}
}

func TestLocalHandlerEnqueuesSourcesOfOursAndWaitingClashes(t *testing.T) {
	s := &synced{}
	c, _ := newController(t, s, multiremote.Config[string]{
		Component: ownership.Policy,
		SourceOf: func(l map[string]string) (string, bool) {
			src, ok := l["source"]
			return src, ok
		},
	})
	ours := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mine", ResourceVersion: "7",
		Labels: map[string]string{ownership.ManagedBy: ownership.Policy, "source": "aws/a"}}}
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "taken", Labels: map[string]string{"source": "aws/b"}}}
	c.Clashes.Record("taken", "aws/c")

	h := c.LocalHandler(func(name string) string { return "Service/" + name })
	h.OnAdd(ours, false)
	h.OnAdd(foreign, false)
	if got := c.Queue.Len(); got != 2 {
		t.Fatalf("queue holds %d keys, want 2 (our source and the one waiting for the name)", got)
	}
	if c.Owns("aws/b", foreign) {
		t.Error("an object without our managed-by label is owned")
	}
	if !c.Owns("aws/a", ours) || c.Owns("aws/z", ours) {
		t.Error("Owns does not compare the object's source")
	}
	c.Expect.Wrote("Service/mine", "7")
	h.OnDelete(ours)
	if !c.Expect.Satisfied("Service/mine", nil) {
		t.Error("the deletion of an object we wrote does not settle our expectation of it")
	}
}

func TestWritesAreCountedAndExpected(t *testing.T) {
	reg := prometheus.NewRegistry()
	writes := metrics.NewFactory(reg, "test").CounterVec("writes_total", "Writes.", "verb")
	s := &synced{}
	c, _ := newController(t, s, multiremote.Config[string]{Counters: multiremote.Counters{Writes: writes}})
	obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-1", ResourceVersion: "5"}}
	var got metav1.DeleteOptions
	err := c.Delete(context.Background(), "a", obj, func(_ context.Context, name string, opts metav1.DeleteOptions) error {
		got = opts
		return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
	}, "delete")
	if err != nil {
		t.Errorf("deleting an object already gone: %v", err)
	}
	if got.Preconditions == nil || *got.Preconditions.UID != "uid-1" || *got.Preconditions.ResourceVersion != "5" {
		t.Errorf("preconditions %+v, want the object's UID and resourceVersion", got.Preconditions)
	}
	err = c.Delete(context.Background(), "a", obj, func(context.Context, string, metav1.DeleteOptions) error {
		return errors.New("connection refused")
	}, "delete")
	if err == nil {
		t.Error("a failed request is no error")
	}
	// The not-found answer reached the API server; the refused connection did not.
	if v := value(t, writes.WithLabelValues("delete")); v != 1 {
		t.Errorf("writes_total = %v, want 1", v)
	}
	written := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "9"}}
	if err := c.Wrote("b", written, nil, "create"); err != nil {
		t.Error(err)
	}
	if v := value(t, writes.WithLabelValues("create")); v != 1 {
		t.Errorf("writes_total{verb=create} = %v, want 1", v)
	}
	if c.Expect.Satisfied("b", nil) || !c.Expect.Satisfied("b", written) {
		t.Error("a write is not expected until the cache shows the object written")
	}
	if r, err := multiremote.Result(nil); r != reconcile.Success || err != nil {
		t.Errorf("Result(nil) = %q, %v", r, err)
	}
}

func TestSetGaugesExportsEveryRemote(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := metrics.NewFactory(reg, "test").GaugeVec("things", "Things.", "remote")
	gauges := []multiremote.Gauge[int]{{Vec: g, Value: func(i int) int { return i }}}
	multiremote.SetGauges(slices.Values([]string{"aws", "gcp"}), map[string]int{"aws": 3, "gone": 9}, gauges)
	if v := value(t, g.WithLabelValues("aws")); v != 3 {
		t.Errorf("aws = %v, want 3", v)
	}
	if v := value(t, g.WithLabelValues("gcp")); v != 0 {
		t.Errorf("gcp (nothing counted) = %v, want 0", v)
	}
	if n := series(t, reg); n != 2 {
		t.Errorf("%d series, want 2: remotes not configured have none", n)
	}
}

// value is the value of a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// series counts the series reg holds.
func series(t *testing.T, reg prometheus.Gatherer) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}
