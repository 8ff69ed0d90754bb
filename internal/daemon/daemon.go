// Package daemon assembles what the process of every component (components/*) shares: API
// clients from the configuration, the metrics registry, the admin server with local readiness,
// remote health probing and leader election, and the binary's main. A component adds its
// controller and runs it while it leads.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon/admin"
	"github.com/kube-semaphore/semaphore/internal/daemon/leader"
	"github.com/kube-semaphore/semaphore/internal/daemon/localranges"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Instruments are the metrics every component has: build_info, API client requests, remote
// health, its work queue and the local ranges its guard refuses. Component-specific metrics are
// created on Factory.
type Instruments struct {
	Factory     *metrics.Factory
	Health      *remote.Health
	Queue       workqueue.MetricsProvider
	LocalRanges *prometheus.GaugeVec
}

// NewInstruments creates the shared metrics of a component on reg.
func NewInstruments(reg prometheus.Registerer, metricsPrefix string, probeInterval time.Duration, log *slog.Logger) Instruments {
	f := metrics.NewFactory(reg, metricsPrefix)
	metrics.BuildInfo(f)
	metrics.ClientGo(f)
	return Instruments{
		Factory:     f,
		Health:      remote.NewHealth(f, probeInterval, log),
		Queue:       metrics.WorkqueueProvider(f),
		LocalRanges: localranges.NewMetric(f),
	}
}

// Base is a configured component without its controller.
type Base struct {
	Instruments
	Log         *slog.Logger
	Registry    *prometheus.Registry
	LocalConfig *rest.Config
	Local       kubernetes.Interface
	Remotes     []remote.Cluster

	election    config.LeaderElection
	resync      time.Duration
	admin       *admin.Server
	adminAddr   string
	listener    net.Listener // nil while a predecessor holds adminAddr (serveAdmin listens)
	prepared    atomic.Bool
	leading     atomic.Bool
	localRanges *localranges.Watcher
}

// New builds everything that can fail on bad configuration, so the process fails at start:
// clients from the kubeconfigs and the admin listener. The configuration must have been
// validated. name is the user agent of every client.
func New(name, metricsPrefix string, shared config.Shared, election config.LeaderElection, log *slog.Logger) (*Base, error) {
	opts := remote.ClientOptions{UserAgent: name, QPS: shared.ClientQPS, Burst: shared.ClientBurst}
	localCfg, err := remote.LocalConfig(shared.LocalKubeconfig, opts)
	if err != nil {
		return nil, err
	}
	local, err := kubernetes.NewForConfig(localCfg)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	remotes, err := remote.LoadRemotes(shared.RemotesDir, shared.Remotes, opts)
	if err != nil {
		return nil, err
	}
	listener, err := admin.Listen(shared.AdminAddr)
	if errors.Is(err, admin.ErrInUse) {
		log.Info("the admin address is held by a socket that does not share it (a predecessor on the host network); listening once it is free", "admin", shared.AdminAddr)
	} else if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	metrics.RegisterProcess(reg)
	b := &Base{
		Instruments: NewInstruments(reg, metricsPrefix, shared.RemoteProbeInterval, log),
		Log:         log,
		Registry:    reg,
		LocalConfig: localCfg,
		Local:       local,
		Remotes:     remotes,
		election:    election,
		resync:      shared.ResyncPeriod,
		admin:       admin.New(reg),
		adminAddr:   shared.AdminAddr,
		listener:    listener,
	}
	// Remote health is metrics only, never readiness: an unreachable remote must not make the
	// pods unready, which would stall every rollout while it lasts (docs/architecture.md).
	b.Health.AddClusters(remotes)
	return b, nil
}

// Guard returns the guard that holds each remote to its ranges and refuses the local cluster's
// own ranges (its Nodes' pod CIDRs and addresses, its Service ranges, its Calico IPAM blocks),
// kept up to date while the component runs. The controller starts only once every source has
// been read: before that the guard would let through a remote address that is local.
func (b *Base) Guard(ranges addrguard.Ranges) (*addrguard.Guard, error) {
	guard := addrguard.New(ranges)
	dyn, err := dynamic.NewForConfig(b.LocalConfig)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	b.localRanges, err = localranges.New(b.Local, dyn, guard, b.LocalRanges, b.resync, b.Log)
	return guard, err
}

// HandleAdmin adds a component's own endpoint to the admin server (admin.Server.Handle).
func (b *Base) HandleAdmin(pattern string, h http.Handler) { b.admin.Handle(pattern, h) }

// AdminAddr is the address the admin server listens on.
func (b *Base) AdminAddr() string {
	if b.listener == nil {
		return b.adminAddr
	}
	return b.listener.Addr().String()
}

// adminWait is how long a component waits for its admin address held by a predecessor that does
// not share it: the successor stands by until the predecessor's pod is deleted, which a rollout
// does once the successor is ready.
const adminWait = 2 * time.Minute

// serveAdmin serves the admin endpoints until ctx is done, first listening if New could not
// (the address was held); the returned channel gets Serve's error. A failure cancels the
// component: without its probes it would be restarted anyway, but later and with less said.
func (b *Base) serveAdmin(ctx context.Context, cancel context.CancelFunc) <-chan error {
	errc := make(chan error, 1)
	go func() {
		err := b.listenAndServe(ctx)
		if err != nil {
			cancel()
		}
		errc <- err
	}()
	return errc
}

func (b *Base) listenAndServe(ctx context.Context) error {
	l := b.listener
	if l == nil {
		var err error
		if l, err = admin.ListenWhenFree(ctx, b.adminAddr, adminWait); errors.Is(err, context.Canceled) {
			return nil // stopped while waiting: nothing failed
		} else if err != nil {
			return err
		}
		b.Log.Info("admin address free: listening", "admin", b.adminAddr)
	}
	return b.admin.Serve(ctx, l)
}

// MetricSpecs describes the metrics of a component whose own metrics create creates (besides
// the standard go_* and process_* ones), for the generated metrics reference.
func MetricSpecs(metricsPrefix string, create func(*metrics.Factory)) []metrics.Spec {
	in := NewInstruments(prometheus.NewRegistry(), metricsPrefix, time.Second, slog.Default())
	create(in.Factory)
	return in.Factory.Specs()
}

// Controller is what a component runs while it leads.
type Controller interface {
	// Run runs workers until ctx is done.
	Run(ctx context.Context, workers int)
	// LocalSynced reports whether the local caches have synced.
	LocalSynced() bool
}

// RunController is Run with a controller: while this replica leads it runs ctrl with workers,
// and /readyz asks it whether its local caches synced. A controller that can resync its remotes
// does so whenever the local ranges its guard refuses change.
func (b *Base) RunController(ctx context.Context, ctrl Controller, workers int) error {
	return b.RunControllerAfter(ctx, nil, ctrl, workers)
}

// RunControllerAfter is RunController for a controller that needs prepare to succeed first,
// once the local ranges have been read: a node agent that waits for the one it replaces to stop
// and takes over what that one worked. While it prepares the replica stands by, and is ready:
// a rollout that starts it beside the old one deletes the old one only then. A controller with
// a Warm method fills its caches meanwhile. An error of prepare ends Run with that error.
func (b *Base) RunControllerAfter(ctx context.Context, prepare func(context.Context) error, ctrl Controller, workers int) error {
	if r, ok := ctrl.(interface{ ResyncRemotes() }); ok && b.localRanges != nil {
		// The guard admits other addresses when the local ranges change: what the controller
		// made of the remotes is made again.
		b.localRanges.OnChange(r.ResyncRemotes)
	}
	if w, ok := ctrl.(interface{ Warm(context.Context) }); ok && prepare != nil {
		// The caches fill while prepare waits (a rollout's successor standing by), so the
		// controller acts on them the moment it may.
		prepareOnly := prepare
		prepare = func(ctx context.Context) error {
			w.Warm(ctx)
			return prepareOnly(ctx)
		}
	}
	return b.run(ctx, prepare, func(ctx context.Context) { ctrl.Run(ctx, workers) }, ctrl.LocalSynced)
}

// run serves the admin endpoints, probes the remotes and, while this replica leads, calls
// prepare (when not nil) and then run, until ctx is done. localSynced tells /readyz whether the
// leader's local caches synced.
func (b *Base) run(ctx context.Context, prepare func(context.Context) error, run func(context.Context), localSynced func() bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prepareErr := make(chan error, 1)
	if prepare != nil {
		run = preparedFirst(prepare, prepareErr, &b.prepared, cancel, run)
	} else {
		b.prepared.Store(true)
	}
	if w := b.localRanges; w != nil {
		go w.Run(ctx)
		b.admin.AddReadyCheck("local-ranges", func() error {
			if !w.Synced() {
				return errors.New("the local cluster's ranges (Nodes, ServiceCIDRs, Calico IPAM blocks) not read yet")
			}
			return nil
		})
		run = afterSync(w.Synced, run)
	}
	b.admin.AddReadyCheck("controller", func() error {
		// A standby replica is ready: it is waiting for the lease, or for its predecessor to
		// stop, as it should.
		if b.leading.Load() && b.prepared.Load() && !localSynced() {
			return errors.New("local caches not synced yet")
		}
		return nil
	})
	serveErr := b.serveAdmin(ctx, cancel)
	go b.Health.Run(ctx)

	err := leader.Run(ctx, b.election, b.Local, b.Log, func(ctx context.Context) {
		b.leading.Store(true)
		run(ctx)
	})
	cancel()
	select {
	case perr := <-prepareErr:
		if err == nil {
			err = perr
		}
	default:
	}
	if serr := <-serveErr; err == nil {
		err = serr
	}
	return err
}

// preparedFirst is run after prepare has succeeded, which it records in prepared; an error of
// prepare goes to errc and cancels the component instead.
func preparedFirst(prepare func(context.Context) error, errc chan<- error, prepared *atomic.Bool, cancel context.CancelFunc, run func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		if err := prepare(ctx); err != nil {
			if ctx.Err() == nil {
				errc <- err
			}
			cancel()
			return
		}
		prepared.Store(true)
		run(ctx)
	}
}

// afterSync is run that starts once synced reports true (or never, when ctx ends first).
func afterSync(synced cache.InformerSynced, run func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		if cache.WaitForCacheSync(ctx.Done(), synced) {
			run(ctx)
		}
	}
}

// Leading is a component whose one controller runs, with its workers, while the replica
// leads.
type Leading[K Controller] struct {
	*Base
	ctrl    K
	workers int
}

// NewLeading returns the component of base that runs ctrl with workers while it leads.
func NewLeading[K Controller](base *Base, ctrl K, workers int) *Leading[K] {
	return &Leading[K]{Base: base, ctrl: ctrl, workers: workers}
}

// Controller is the component's controller, for tests that inspect it.
func (l *Leading[K]) Controller() K { return l.ctrl }

// Run serves the admin endpoints, probes the remotes and, while this replica leads, runs the
// controller, until ctx is done.
func (l *Leading[K]) Run(ctx context.Context) error {
	return l.RunController(ctx, l.ctrl, l.workers)
}
