package component

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/logging"
)

// Config is a component's configuration: validated after loading, and carrying the log level.
type Config interface {
	config.Validator
	Level() slog.Level
}

// Main is the body of a component binary: it loads cfg from the environment (printing the
// variables for -h), sets up logging and calls run until SIGINT or SIGTERM. Any error ends the
// process with one line naming the component and a non-zero status.
func Main(name string, cfg Config, run func(context.Context, *slog.Logger) error) {
	err := config.Load(os.Args[1:], os.Stdout, cfg)
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err == nil {
		log := logging.Setup(os.Stderr, cfg.Level(), name)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, log)
		stop()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
