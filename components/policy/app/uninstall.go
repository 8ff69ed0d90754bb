package app

import (
	"log/slog"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// Build is the component cfg asks for: semaphore-policy, or its uninstall mode.
func Build(cfg Config, log *slog.Logger) (daemon.App, error) {
	if cfg.Uninstall {
		return NewUninstalling(cfg, log)
	}
	return New(cfg, log)
}

// NewUninstalling is semaphore-policy in the uninstall mode: it deletes every GlobalNetworkSet
// that carries its managed-by label, whichever remote it was made for, and its Lease.
func NewUninstalling(cfg Config, log *slog.Logger) (*daemon.Uninstalling, error) {
	u, err := daemon.NewUninstalling(Name, MetricsPrefix, cfg.Shared, log)
	if err != nil {
		return nil, err
	}
	resource, _ := calico.Resource(cfg.CalicoAPI) // checked by Validate
	if err := u.DeleteOwned([]uninstall.Owned{{Resource: resource, Component: Name}}, cfg.LeaderElection); err != nil {
		return nil, err
	}
	return u, nil
}
