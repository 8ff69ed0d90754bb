// Package app assembles semaphore-service-mirror from its configuration: clients, metrics,
// admin server, leader election and the controller.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/metadata"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/apply"
	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/globalcontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/limit"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirrorcontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Name is the component's name: its user agent, field manager and managed-by label value.
const Name = ownership.ServiceMirror

// MetricsPrefix starts the name of every metric of this component.
const MetricsPrefix = "semaphore_service_mirror"

// Config is the service mirror's configuration, read from the environment.
type Config struct {
	config.Elected
	Namespace      string          `envconfig:"SEMAPHORE_MIRROR_NAMESPACE" default:"semaphore" desc:"local namespace that holds the mirror Services and EndpointSlices"`
	LabelSelector  string          `envconfig:"SEMAPHORE_MIRROR_LABEL_SELECTOR" default:"mirror.semaphore.uw.io/mirror-service=true" desc:"label selector of the remote Services to mirror"`
	Workers        int             `envconfig:"SEMAPHORE_MIRROR_WORKERS" default:"8" desc:"remote Services reconciled in parallel, and as many global services"`
	DriftInterval  time.Duration   `envconfig:"SEMAPHORE_MIRROR_DRIFT_INTERVAL" default:"10s" desc:"how often the mirror drift and inventory metrics are recomputed"`
	GlobalSelector string          `envconfig:"SEMAPHORE_GLOBAL_LABEL_SELECTOR" default:"mirror.semaphore.uw.io/global-service=true" desc:"label selector of the Services, in every cluster, that are global services; empty turns global services off"`
	WithdrawAfter  withdraw.Policy `envconfig:"SEMAPHORE_WITHDRAW_AFTER" desc:"outage policy: after this long without a successful sync with a remote, its mirrored endpoints (mirrors and global services) are marked not ready, and ready again as soon as it answers; a duration for every remote (5m), remote:duration pairs (aws:5m,gcp:30s) or both (5m,gcp:30s); empty keeps them as they are during an outage"`
	// The limits bound what one remote can make the service mirror hold and write.
	MaxServices int  `envconfig:"SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE" default:"1000" desc:"most Services of one remote that are mirrored: of a remote with more selected Services, the first this many in namespace/name order are, the others are not (their mirrors are deleted), counted in over_limit{what=services} and logged; at least 1"`
	MCS         bool `envconfig:"SEMAPHORE_MCS_ENABLED" default:"false" desc:"serve the Multi-Cluster Services API: ServiceImports, derived Services and EndpointSlices for the Services exported (ServiceExport) in any cluster, and the conditions of the local ServiceExports; needs the API's CRDs (multicluster.x-k8s.io) in the local cluster and every remote"`
	// MCSClusterIDInterval: a cluster's ID is meant to stay while it is in the clusterset.
	MCSClusterIDInterval time.Duration `envconfig:"SEMAPHORE_MCS_CLUSTER_ID_INTERVAL" default:"30s" desc:"how often the Multi-Cluster Services API reads again every cluster's ID, from its about.k8s.io ClusterProperty cluster.clusterset.k8s.io (where a cluster has none, its name is its ID)"`
	GlobalMaxServices    int           `envconfig:"SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE" default:"1000" desc:"most global services one remote contributes endpoints to (and creates, when it is the only cluster that has one): of a remote with more selected global Services, the first this many in namespace/name order do, the others do not, counted in over_limit{what=global_services} and logged; at least 1"`

	selector, globalSelector labels.Selector
}

// Validate checks the configuration; each error names its variable.
func (c *Config) Validate() error {
	if err := c.Elected.Validate(Name); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("SEMAPHORE_MIRROR_NAMESPACE: %q: %s", c.Namespace, strings.Join(errs, "; "))
	}
	sel, err := labels.Parse(c.LabelSelector)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_MIRROR_LABEL_SELECTOR: %w", err)
	}
	if sel.Empty() {
		return errors.New("SEMAPHORE_MIRROR_LABEL_SELECTOR: must not be empty; mirroring every Service is never what you want")
	}
	c.selector = sel
	if err := c.WithdrawAfter.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WITHDRAW_AFTER: %w", err)
	}
	if err := c.RemoteRanges.Validate(c.Remotes); err != nil {
		return err
	}
	if err := c.validateGlobal(); err != nil {
		return err
	}
	if err := checkLimits(c.MaxServices, c.GlobalMaxServices); err != nil {
		return err
	}
	if c.MCSClusterIDInterval <= 0 {
		return errors.New("SEMAPHORE_MCS_CLUSTER_ID_INTERVAL: must be positive")
	}
	return daemon.CheckWorkers("SEMAPHORE_MIRROR_WORKERS", c.Workers, "SEMAPHORE_MIRROR_DRIFT_INTERVAL", c.DriftInterval)
}

// validateGlobal checks the global services' selector. A remote named "global" is refused
// with them: <name>.<namespace>.svc.cluster.global names global services in DNS.
func (c *Config) validateGlobal() error {
	if c.GlobalSelector == "" {
		return nil
	}
	sel, err := labels.Parse(c.GlobalSelector)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_GLOBAL_LABEL_SELECTOR: %w", err)
	}
	if sel.Empty() {
		return errors.New("SEMAPHORE_GLOBAL_LABEL_SELECTOR: selects every Service; set it to the empty string to turn global services off")
	}
	if slices.Contains(c.Remotes, globalZone) {
		return fmt.Errorf("SEMAPHORE_REMOTES: a remote named %q clashes with the DNS names of global services (<name>.<namespace>.svc.cluster.global); rename it, or turn global services off with SEMAPHORE_GLOBAL_LABEL_SELECTOR=\"\"", globalZone)
	}
	c.globalSelector = sel
	return nil
}

// checkLimits checks the limits per remote: a limit of 0 would mirror nothing and is never
// what was meant.
func checkLimits(mirrors, globals int) error {
	if mirrors < 1 {
		return fmt.Errorf("SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE: %d: must be at least 1", mirrors)
	}
	if globals < 1 {
		return fmt.Errorf("SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE: %d: must be at least 1", globals)
	}
	return nil
}

// refusedWhat is what the service mirror does with an endpoint address a remote may not publish.
const refusedWhat = "were left out of the mirrors and global services"

// globalZone is the last label of the DNS names of global services.
const globalZone = "global"

// MetricSpecs describes every metric the component exports (besides the standard go_* and
// process_* ones), for the generated metrics reference.
func MetricSpecs() []metrics.Spec {
	return daemon.MetricSpecs(MetricsPrefix, func(f *metrics.Factory) {
		mirrorcontroller.NewMetrics(f)
		globalcontroller.NewMetrics(f)
		mcscontroller.NewMetrics(f)
		withdraw.NewMetrics(f)
		adopt.NewMetrics(f)
		addrguard.RefusedMetric(f, refusedWhat)
		limit.OverMetric(f)
	})
}

// ServiceMirror is a configured service mirror, ready to run.
type ServiceMirror struct {
	*daemon.Leading[*Controllers]
	cfg Config
}

// New builds everything that can fail on bad configuration, so the process fails at start:
// clients from the kubeconfigs, the admin listener. cfg must have been validated.
func New(cfg Config, log *slog.Logger) (*ServiceMirror, error) {
	base, err := daemon.New(Name, MetricsPrefix, cfg.Shared, cfg.LeaderElection, log)
	if err != nil {
		return nil, err
	}
	// One watch of each remote's EndpointSlices, and one of the mirror namespace, for the
	// mirrors and the global services.
	remoteSlices := caches.NewRemoteSlices(cfg.ResyncPeriod)
	mirrorNamespace := caches.NewMirrorNamespace(base.Local, cfg.Namespace, cfg.ResyncPeriod)
	var adopter *adopt.Adopter
	if cfg.AdoptOriginal {
		adopter = adopt.NewAdopter(base.Local, cfg.Namespace, cfg.ResyncPeriod, base.Factory, log)
	}
	tracker := withdraw.NewTracker(cfg.WithdrawAfter, cfg.Remotes, base.Health, withdraw.NewMetrics(base.Factory), log)
	// One guard and one report of refusals for the mirrors and the global services.
	guard, err := base.Guard(cfg.RemotePodRanges)
	if err != nil {
		return nil, err
	}
	write := apply.Config{
		Namespace:       cfg.Namespace,
		MirrorNamespace: mirrorNamespace,
		Withdraw:        tracker,
		Guard:           guard,
		Refusals:        addrguard.NewReporter(addrguard.RefusedMetric(base.Factory, refusedWhat), log),
		Adopter:         adopter,
	}
	// One gauge of what is over the limits, for the mirrors and the global services.
	over := limit.OverMetric(base.Factory)
	ctrls := &Controllers{Adopter: adopter, Withdraw: tracker, WithdrawInterval: min(cfg.RemoteProbeInterval, time.Second), Mirrors: mirrorcontroller.New(mirrorcontroller.Options{
		Config:        write,
		Selector:      cfg.selector,
		DriftInterval: cfg.DriftInterval,
		RemoteSlices:  remoteSlices,
		Limit:         limit.New(cfg.MaxServices, limit.WhatServices, "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", over, log),
	}, base.Local, base.Remotes, base.Health, mirrorcontroller.NewMetrics(base.Factory), base.Queue, log)}
	// One watch of the local Nodes' zones, for the local-first routing of both.
	var zones *caches.Zones
	if cfg.globalSelector != nil || cfg.MCS {
		meta, err := metadata.NewForConfig(base.LocalConfig)
		if err != nil {
			return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
		}
		zones = caches.NewZones(meta, cfg.ResyncPeriod)
	}
	if cfg.globalSelector != nil {
		ctrls.Global = globalcontroller.New(globalcontroller.Options{
			Config:            write,
			LocalCluster:      cfg.LocalCluster,
			Selector:          cfg.globalSelector,
			ResyncPeriod:      cfg.ResyncPeriod,
			InventoryInterval: cfg.DriftInterval,
			RemoteSlices:      remoteSlices,
			Limit:             limit.New(cfg.GlobalMaxServices, limit.WhatGlobalServices, "SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE", over, log.With("global", true)),
			Zones:             zones,
		}, base.Local, base.Remotes, base.Health, globalcontroller.NewMetrics(base.Factory), base.Queue, log.With("global", true))
	}
	if cfg.MCS {
		if ctrls.MCS, err = newMCS(cfg, base, write, remoteSlices, zones, log); err != nil {
			return nil, err
		}
	}
	return &ServiceMirror{Leading: daemon.NewLeading(base, ctrls, cfg.Workers), cfg: cfg}, nil
}

// Starting are the attributes of the line logged when the component starts.
func (a *ServiceMirror) Starting() []any {
	return []any{"cluster", a.cfg.LocalCluster, "remotes", a.cfg.Remotes, "namespace", a.cfg.Namespace, "global", a.cfg.GlobalSelector, "mcs", a.cfg.MCS, "withdraw_after", a.cfg.WithdrawAfter.String(),
		"max_services_per_remote", a.cfg.MaxServices, "global_max_services_per_remote", a.cfg.GlobalMaxServices, "admin", a.AdminAddr()}
}

// newMCS builds the controller of the Multi-Cluster Services API, sharing the mirrors' remote
// slices, what holds back a remote's endpoints and the zones local-first hints follow.
func newMCS(cfg Config, base *daemon.Base, write apply.Config, remoteSlices *caches.RemoteSlices, zones *caches.Zones, log *slog.Logger) (*mcscontroller.Controller, error) {
	c, err := mcscontroller.New(mcscontroller.Options{
		Config:            write,
		LocalCluster:      cfg.LocalCluster,
		ResyncPeriod:      cfg.ResyncPeriod,
		InventoryInterval: cfg.DriftInterval,
		RemoteSlices:      remoteSlices,
		Zones:             zones,
		ClusterIDInterval: cfg.MCSClusterIDInterval,
	}, base.Local, base.LocalConfig, base.Remotes, base.Health, mcscontroller.NewMetrics(base.Factory), base.Queue, log.With("mcs", true))
	if err != nil {
		return nil, fmt.Errorf("the Multi-Cluster Services API's clients: %w", err)
	}
	return c, nil
}
