package app

import (
	"log/slog"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// NewUninstalling is semaphore-policy in the uninstall mode: it deletes every GlobalNetworkSet
// that carries its managed-by label, whichever remote it was made for, and its Lease.
func NewUninstalling(cfg Config, log *slog.Logger) (*daemon.Uninstalling, error) {
	resource, _ := calico.Resource(cfg.CalicoAPI) // checked by Validate
	return daemon.NewDeletingOwned(Name, MetricsPrefix, cfg.Elected, []uninstall.Owned{{Resource: resource, Component: Name}}, log)
}
