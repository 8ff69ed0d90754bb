package app

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/internal/component"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// Build is the component cfg asks for: semaphore-policy, or its uninstall mode.
func Build(cfg Config, log *slog.Logger) (component.App, error) {
	if cfg.Uninstall {
		return NewUninstalling(cfg, log)
	}
	return New(cfg, log)
}

// NewUninstalling is semaphore-policy in the uninstall mode: it deletes every GlobalNetworkSet
// that carries its managed-by label, whichever remote it was made for, and its Lease.
func NewUninstalling(cfg Config, log *slog.Logger) (*component.Uninstalling, error) {
	u, err := component.NewUninstalling(Name, MetricsPrefix, cfg.Shared, log)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(u.LocalConfig)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	resource, _ := calico.Resource(cfg.CalicoAPI) // checked by Validate
	u.Remove = func(ctx context.Context) error {
		n, err := uninstall.DeleteOwned(ctx, dyn, uninstall.Owned{Resource: resource, Component: Name})
		if err != nil {
			return err
		}
		log.Info("deleted the GlobalNetworkSets", "sets", n)
		if !cfg.LeaderElection.Enabled {
			return nil
		}
		return uninstall.DeleteLease(ctx, u.Local, cfg.LeaderElection.Namespace, cfg.LeaderElection.LeaseName)
	}
	return u, nil
}
