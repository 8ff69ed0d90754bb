// Command semaphore-service-mirror mirrors opted-in Services of remote clusters into the local
// cluster as selector-less ClusterIP Services with EndpointSlices pointing at the remote pods.
package main

import (
	"context"
	"log/slog"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/internal/component"
)

func main() {
	var cfg app.Config
	component.Main(app.Name, &cfg, func(ctx context.Context, log *slog.Logger) error {
		a, err := app.New(cfg, log)
		if err != nil {
			return err
		}
		log.Info("starting", "cluster", cfg.LocalCluster, "remotes", cfg.Remotes, "namespace", cfg.Namespace, "admin", a.AdminAddr())
		return a.Run(ctx)
	})
}
