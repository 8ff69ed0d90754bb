// Package app assembles semaphore-service-mirror from its configuration: clients, metrics,
// admin server, leader election and the controller.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-semaphore/semaphore/components/internal/admin"
	"github.com/kube-semaphore/semaphore/components/internal/config"
	"github.com/kube-semaphore/semaphore/components/internal/labels"
	"github.com/kube-semaphore/semaphore/components/internal/leader"
	"github.com/kube-semaphore/semaphore/components/internal/metrics"
	"github.com/kube-semaphore/semaphore/components/internal/remote"
	"github.com/kube-semaphore/semaphore/components/service-mirror/controller"
)

// Name is the component's name: its user agent, field manager and managed-by label value.
const Name = labels.ServiceMirror

// MetricsPrefix starts the name of every metric of this component.
const MetricsPrefix = "semaphore_service_mirror"

// Config is the service mirror's configuration, read from the environment.
type Config struct {
	config.Shared
	config.LeaderElection
	Namespace     string        `envconfig:"SEMAPHORE_MIRROR_NAMESPACE" default:"semaphore" desc:"local namespace that holds the mirror Services and EndpointSlices"`
	LabelSelector string        `envconfig:"SEMAPHORE_MIRROR_LABEL_SELECTOR" default:"mirror.semaphore.uw.io/mirror-service=true" desc:"label selector of the remote Services to mirror"`
	Workers       int           `envconfig:"SEMAPHORE_MIRROR_WORKERS" default:"8" desc:"remote Services reconciled in parallel"`
	DriftInterval time.Duration `envconfig:"SEMAPHORE_MIRROR_DRIFT_INTERVAL" default:"10s" desc:"how often the mirror drift and inventory metrics are recomputed"`

	selector k8slabels.Selector
}

// Validate checks the configuration; each error names its variable.
func (c *Config) Validate() error {
	if err := c.Shared.Validate(); err != nil {
		return err
	}
	c.LeaderElection.Complete(Name)
	if err := c.LeaderElection.Validate(); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("SEMAPHORE_MIRROR_NAMESPACE: %q: %s", c.Namespace, strings.Join(errs, "; "))
	}
	sel, err := k8slabels.Parse(c.LabelSelector)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_MIRROR_LABEL_SELECTOR: %w", err)
	}
	if sel.Empty() {
		return errors.New("SEMAPHORE_MIRROR_LABEL_SELECTOR: must not be empty; mirroring every Service is never what you want")
	}
	c.selector = sel
	if c.Workers < 1 {
		return errors.New("SEMAPHORE_MIRROR_WORKERS: must be at least 1")
	}
	if c.DriftInterval <= 0 {
		return errors.New("SEMAPHORE_MIRROR_DRIFT_INTERVAL: must be positive")
	}
	return nil
}

// instruments are every metric of the component.
type instruments struct {
	factory    *metrics.Factory
	controller *controller.Metrics
	health     *remote.Health
	queue      workqueue.MetricsProvider
}

func newInstruments(reg prometheus.Registerer, probeInterval time.Duration, log *slog.Logger) instruments {
	f := metrics.NewFactory(reg, MetricsPrefix)
	metrics.BuildInfo(f)
	metrics.ClientGo(f)
	return instruments{
		factory:    f,
		controller: controller.NewMetrics(f),
		health:     remote.NewHealth(f, probeInterval, log),
		queue:      metrics.WorkqueueProvider(f),
	}
}

// MetricSpecs describes every metric the component exports (besides the standard go_* and
// process_* ones), for the generated metrics reference.
func MetricSpecs() []metrics.Spec {
	return newInstruments(prometheus.NewRegistry(), time.Second, slog.Default()).factory.Specs()
}

// App is a configured service mirror, ready to run.
type App struct {
	cfg      Config
	log      *slog.Logger
	Registry *prometheus.Registry
	admin    *admin.Server
	listener net.Listener
	local    kubernetes.Interface
	health   *remote.Health
	ctrl     *controller.Controller
	leading  atomic.Bool
}

// New builds everything that can fail on bad configuration, so the process fails at start:
// clients from the kubeconfigs, the admin listener. cfg must have been validated.
func New(cfg Config, log *slog.Logger) (*App, error) {
	opts := remote.ClientOptions{UserAgent: Name, QPS: cfg.ClientQPS, Burst: cfg.ClientBurst}
	localCfg, err := remote.LocalConfig(cfg.LocalKubeconfig, opts)
	if err != nil {
		return nil, err
	}
	local, err := kubernetes.NewForConfig(localCfg)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	remotes, err := remote.LoadRemotes(cfg.RemotesDir, cfg.Remotes, opts)
	if err != nil {
		return nil, err
	}
	listener, err := admin.Listen(cfg.AdminAddr)
	if err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	metrics.RegisterProcess(reg)
	in := newInstruments(reg, cfg.RemoteProbeInterval, log)
	a := &App{cfg: cfg, log: log, Registry: reg, admin: admin.New(reg), listener: listener, local: local, health: in.health}
	for _, r := range remotes {
		a.health.Add(r.Name, remote.ProbeReadyz(r))
		a.admin.AddReadyCheck("remote:"+r.Name, func() error {
			// Only the leader syncs caches; a standby is ready while the remote answers.
			if a.leading.Load() {
				return a.health.Check(r.Name)
			}
			return a.health.Reachable(r.Name)
		})
	}
	a.ctrl = controller.New(controller.Options{
		Namespace:     cfg.Namespace,
		Selector:      cfg.selector,
		ResyncPeriod:  cfg.ResyncPeriod,
		DriftInterval: cfg.DriftInterval,
	}, local, remotes, a.health, in.controller, in.queue, log)
	return a, nil
}

// AdminAddr is the address the admin server listens on.
func (a *App) AdminAddr() string { return a.listener.Addr().String() }

// Controller is the app's controller, for tests that inspect its inventory.
func (a *App) Controller() *controller.Controller { return a.ctrl }

// Run serves the admin endpoints, probes the remotes and, while this replica leads, runs the
// controller, until ctx is done.
func (a *App) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leading := make(chan struct{})
	a.admin.AddReadyCheck("controller", func() error {
		select {
		case <-leading:
			if !a.ctrl.LocalSynced() {
				return errors.New("local caches not synced yet")
			}
		default:
			// A standby replica is ready: it is waiting for the lease, as it should.
		}
		return nil
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- a.admin.Serve(ctx, a.listener) }()
	go a.health.Run(ctx)

	err := leader.Run(ctx, a.cfg.LeaderElection, a.local, a.log, func(ctx context.Context) {
		a.leading.Store(true)
		close(leading)
		a.ctrl.Run(ctx, a.cfg.Workers)
	})
	cancel()
	if serr := <-serveErr; err == nil {
		err = serr
	}
	return err
}
