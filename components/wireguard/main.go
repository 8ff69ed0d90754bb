// Command semaphore-wireguard runs on every node and keeps one WireGuard device per remote
// cluster, peered with that cluster's nodes and routing their pod CIDRs.
package main

import (
	"context"
	"log/slog"

	"github.com/kube-semaphore/semaphore/components/wireguard/app"
	"github.com/kube-semaphore/semaphore/internal/component"
)

func main() {
	var cfg app.Config
	component.Main(app.Name, &cfg, func(ctx context.Context, log *slog.Logger) error {
		a, err := app.New(cfg, log)
		if err != nil {
			return err
		}
		log.Info("starting", "cluster", cfg.LocalCluster, "remotes", cfg.Remotes, "node", cfg.NodeName, "mode", string(cfg.Mode), "admin", a.AdminAddr())
		return a.Run(ctx)
	})
}
