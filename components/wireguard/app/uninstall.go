package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/daemon"
)

// NewUninstalling is semaphore-wireguard in the uninstall mode: it removes, on its node, every
// device it made (a key file of that name is in the key directory: what staleDevices calls
// ours), their routes, the key files, the agents' lock file and its Node's annotations of ours,
// whatever the remotes.
func NewUninstalling(cfg Config, log *slog.Logger) (*daemon.Uninstalling, error) {
	u, err := daemon.NewUninstalling(Name, MetricsPrefix, cfg.Shared, log)
	if err != nil {
		return nil, err
	}
	mgr, err := device.NewManager(cfg.Mode, log)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_WG_MODE: %w", err)
	}
	mgr.SetStateDir(cfg.KeyDir) // Delete removes the peers handed over, with the key files
	u.Remove = func(ctx context.Context) error {
		if err := removeDevices(mgr, cfg.KeyDir, log); err != nil {
			return err
		}
		n, err := controller.Unpublish(ctx, u.Local, cfg.NodeName)
		if err == nil && n > 0 {
			log.Info("removed the node's annotations", "node", cfg.NodeName, "annotations", n)
		}
		return err
	}
	return u, nil
}

// removeDevices deletes the device of every key file of ours in keyDir (with its routes; an
// absent device is no error) and then the key file.
func removeDevices(mgr *device.Manager, keyDir string, log *slog.Logger) error {
	names, err := device.KeyNames(keyDir, peers.DevicePrefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if err := mgr.Delete(name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(device.KeyFile(keyDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		log.Info("removed the device and its key", "device", name)
	}
	// The lock of the agents that worked them: none runs beside the uninstall mode (the hook's
	// rollout stops every old agent before it starts ours).
	if err := os.Remove(device.HoldFile(keyDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
