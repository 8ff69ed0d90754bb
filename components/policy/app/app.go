// Package app assembles semaphore-policy from its configuration: clients, metrics, admin
// server, leader election and the controller.
package app

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/controller"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Name is the component's name: its user agent, field manager and managed-by label value.
const Name = ownership.Policy

// MetricsPrefix starts the name of every metric of this component.
const MetricsPrefix = "semaphore_policy"

// Config is semaphore-policy's configuration, read from the environment.
type Config struct {
	config.Elected
	PodLabel          string        `envconfig:"SEMAPHORE_POLICY_LABEL" default:"policy.semaphore.uw.io/name" desc:"label of remote pods whose value names their set"`
	CalicoAPI         string        `envconfig:"SEMAPHORE_POLICY_CALICO_API" default:"projectcalico.org/v3" desc:"API group/version of the GlobalNetworkSets: projectcalico.org/v3 (Calico API server) or crd.projectcalico.org/v1 (Calico CRDs)"`
	Workers           int           `envconfig:"SEMAPHORE_POLICY_WORKERS" default:"4" desc:"sets reconciled in parallel"`
	InventoryInterval time.Duration `envconfig:"SEMAPHORE_POLICY_INVENTORY_INTERVAL" default:"10s" desc:"how often the set and address metrics are recomputed"`
	MaxSetsPerRemote  int           `envconfig:"SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE" default:"1000" desc:"GlobalNetworkSets one remote's pods may make; beyond it the first by name are made, the others left out (and deleted)"`
	MaxSetMembers     int           `envconfig:"SEMAPHORE_POLICY_MAX_SET_MEMBERS" default:"10000" desc:"addresses in one GlobalNetworkSet; beyond it the first by address go in, the others are left out"`
}

// Validate checks the configuration; each error names its variable.
func (c *Config) Validate() error {
	if err := c.Elected.Validate(Name); err != nil {
		return err
	}
	if err := c.RemoteRanges.Validate(c.Remotes); err != nil {
		return err
	}
	if errs := validation.IsQualifiedName(c.PodLabel); len(errs) > 0 {
		return fmt.Errorf("SEMAPHORE_POLICY_LABEL: %q is not a label key: %s", c.PodLabel, strings.Join(errs, "; "))
	}
	if _, err := calico.Resource(c.CalicoAPI); err != nil {
		return fmt.Errorf("SEMAPHORE_POLICY_CALICO_API: %w", err)
	}
	if c.MaxSetsPerRemote < 1 {
		return fmt.Errorf("SEMAPHORE_POLICY_MAX_SETS_PER_REMOTE: must be at least 1, not %d", c.MaxSetsPerRemote)
	}
	if c.MaxSetMembers < 1 {
		return fmt.Errorf("SEMAPHORE_POLICY_MAX_SET_MEMBERS: must be at least 1, not %d", c.MaxSetMembers)
	}
	return daemon.CheckWorkers("SEMAPHORE_POLICY_WORKERS", c.Workers, "SEMAPHORE_POLICY_INVENTORY_INTERVAL", c.InventoryInterval)
}

// MetricSpecs describes every metric the component exports (besides the standard go_* and
// process_* ones), for the generated metrics reference.
func MetricSpecs() []metrics.Spec {
	return daemon.MetricSpecs(MetricsPrefix, func(f *metrics.Factory) { controller.NewMetrics(f) })
}

// Policy is a configured semaphore-policy, ready to run.
type Policy struct {
	*daemon.Leading[*controller.NetworkSets]
	cfg Config
}

// New builds everything that can fail on bad configuration, so the process fails at start.
// cfg must have been validated.
func New(cfg Config, log *slog.Logger) (*Policy, error) {
	base, err := daemon.New(Name, MetricsPrefix, cfg.Shared, cfg.LeaderElection, log)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(base.LocalConfig)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	resource, _ := calico.Resource(cfg.CalicoAPI) // checked by Validate
	guard, err := base.Guard(cfg.RemotePodRanges)
	if err != nil {
		return nil, err
	}
	ctrl := controller.New(controller.Options{
		PodLabel:          cfg.PodLabel,
		API:               cfg.CalicoAPI,
		Resource:          resource,
		ResyncPeriod:      cfg.ResyncPeriod,
		InventoryInterval: cfg.InventoryInterval,
		AdoptOriginal:     cfg.AdoptOriginal,
		Guard:             guard,
		MaxSetsPerRemote:  cfg.MaxSetsPerRemote,
		MaxSetMembers:     cfg.MaxSetMembers,
	}, base.Local, dyn, base.Remotes, base.Health, controller.NewMetrics(base.Factory), base.Queue, log)
	return &Policy{Leading: daemon.NewLeading(base, ctrl, cfg.Workers), cfg: cfg}, nil
}

// Starting are the attributes of the line logged when the component starts.
func (a *Policy) Starting() []any {
	return []any{"cluster", a.cfg.LocalCluster, "remotes", a.cfg.Remotes, "calico_api", a.cfg.CalicoAPI, "label", a.cfg.PodLabel, "admin", a.AdminAddr()}
}
