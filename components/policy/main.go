// Command semaphore-policy turns labelled pods of remote clusters into Calico GlobalNetworkSets,
// so ordinary Calico NetworkPolicies can allow or deny cross-cluster traffic.
package main

import (
	"context"
	"log/slog"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/internal/component"
)

func main() {
	var cfg app.Config
	component.Main(app.Name, &cfg, func(ctx context.Context, log *slog.Logger) error {
		a, err := app.New(cfg, log)
		if err != nil {
			return err
		}
		log.Info("starting", "cluster", cfg.LocalCluster, "remotes", cfg.Remotes, "calico_api", cfg.CalicoAPI, "label", cfg.PodLabel, "admin", a.AdminAddr())
		return a.Run(ctx)
	})
}
