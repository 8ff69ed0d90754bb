// Command semaphore-service-mirror mirrors opted-in Services of remote clusters into the local
// cluster as selector-less ClusterIP Services with EndpointSlices pointing at the remote pods.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kube-semaphore/semaphore/components/internal/config"
	"github.com/kube-semaphore/semaphore/components/internal/logging"
	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", app.Name, err)
		os.Exit(1)
	}
}

func run() error {
	var cfg app.Config
	if err := config.Load(os.Args[1:], os.Stdout, &cfg); err != nil {
		if errors.Is(err, config.ErrHelp) {
			return nil
		}
		return err
	}
	log := logging.Setup(os.Stderr, cfg.LogLevel, app.Name)
	a, err := app.New(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "cluster", cfg.LocalCluster, "remotes", cfg.Remotes, "namespace", cfg.Namespace, "admin", a.AdminAddr())
	return a.Run(ctx)
}
