package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon/logging"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// Config is a component's configuration: validated after loading, and carrying the log level
// and the choice of the uninstall mode.
type Config interface {
	config.Validator
	Level() slog.Level
	UninstallMode() bool
}

// App is a component built from its configuration.
type App interface {
	// Starting are the attributes of the line logged when it starts.
	Starting() []any
	// Run runs the component until ctx is done.
	Run(ctx context.Context) error
}

// Main is the body of a component binary. With the argument uninstall-hook it is the chart's
// pre-delete hook (package uninstall); otherwise it sets the collector's targets (tuneGC), loads a C
// from the environment (printing the variables for -h), sets up logging, builds the app (Build),
// logs its start and runs it until SIGINT or SIGTERM. Any error ends the process with one line
// naming the component and a non-zero status.
func Main[C any, PC interface {
	*C
	Config
}, A App](name string, newApp func(C, *slog.Logger) (A, error), newUninstalling func(C, *slog.Logger) (*Uninstalling, error)) {
	if len(os.Args) > 1 && os.Args[1] == uninstall.HookCommand {
		mainHook(name)
		return
	}
	softLimit := tuneGC(os.LookupEnv, cgroupRoot)
	var cfg C
	err := config.Load(os.Args[1:], os.Stdout, PC(&cfg))
	if errors.Is(err, config.ErrHelp) {
		return
	}
	if err == nil {
		log := logging.Setup(os.Stderr, PC(&cfg).Level(), name)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		if softLimit > 0 {
			log.Debug("soft memory limit from the container's", "gomemlimit_bytes", softLimit)
		}
		err = run(ctx, log, func() (App, error) { return Build[C, PC](cfg, log, newApp, newUninstalling) })
		stop()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Build builds the app cfg asks for: with newUninstalling in the uninstall mode
// (SEMAPHORE_UNINSTALL), with newApp otherwise.
func Build[C any, PC interface {
	*C
	Config
}, A App](cfg C, log *slog.Logger, newApp func(C, *slog.Logger) (A, error), newUninstalling func(C, *slog.Logger) (*Uninstalling, error)) (App, error) {
	if PC(&cfg).UninstallMode() {
		return newUninstalling(cfg, log)
	}
	return newApp(cfg, log)
}

// mainHook runs the pre-delete hook (runHook) until it ends or SIGTERM, and exits non-zero with
// one line naming the component when it fails: Helm reports the hook's failure.
func mainHook(name string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runHook(ctx, name)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", name, uninstall.HookCommand, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, newApp func() (App, error)) error {
	a, err := newApp()
	if err != nil {
		return err
	}
	log.Info("starting", a.Starting()...)
	return a.Run(ctx)
}

// CheckWorkers checks the settings of a controller's workers (at least one) and of the
// interval of its inventory (positive); the errors name the variables.
func CheckWorkers(workersVar string, workers int, intervalVar string, interval time.Duration) error {
	if workers < 1 {
		return fmt.Errorf("%s: must be at least 1", workersVar)
	}
	if interval <= 0 {
		return fmt.Errorf("%s: must be positive", intervalVar)
	}
	return nil
}
