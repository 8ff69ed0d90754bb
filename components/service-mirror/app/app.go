// Package app assembles semaphore-service-mirror from its configuration: clients, metrics,
// admin server, leader election and the controller.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-semaphore/semaphore/components/service-mirror/controller"
	"github.com/kube-semaphore/semaphore/internal/component"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/labels"
	"github.com/kube-semaphore/semaphore/internal/metrics"
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
	return component.CheckWorkers("SEMAPHORE_MIRROR_WORKERS", c.Workers, "SEMAPHORE_MIRROR_DRIFT_INTERVAL", c.DriftInterval)
}

// MetricSpecs describes every metric the component exports (besides the standard go_* and
// process_* ones), for the generated metrics reference.
func MetricSpecs() []metrics.Spec {
	return component.MetricSpecs(MetricsPrefix, func(f *metrics.Factory) { controller.NewMetrics(f) })
}

// App is a configured service mirror, ready to run.
type App struct {
	*component.Leading[*controller.Controller]
	cfg Config
}

// New builds everything that can fail on bad configuration, so the process fails at start:
// clients from the kubeconfigs, the admin listener. cfg must have been validated.
func New(cfg Config, log *slog.Logger) (*App, error) {
	base, err := component.New(Name, MetricsPrefix, cfg.Shared, cfg.LeaderElection, log)
	if err != nil {
		return nil, err
	}
	ctrl := controller.New(controller.Options{
		Namespace:     cfg.Namespace,
		Selector:      cfg.selector,
		ResyncPeriod:  cfg.ResyncPeriod,
		DriftInterval: cfg.DriftInterval,
	}, base.Local, base.Remotes, base.Health, controller.NewMetrics(base.Factory), base.Queue, log)
	return &App{Leading: component.NewLeading(base, ctrl, cfg.Workers), cfg: cfg}, nil
}

// Starting are the attributes of the line logged when the component starts.
func (a *App) Starting() []any {
	return []any{"cluster", a.cfg.LocalCluster, "remotes", a.cfg.Remotes, "namespace", a.cfg.Namespace, "admin", a.AdminAddr()}
}
