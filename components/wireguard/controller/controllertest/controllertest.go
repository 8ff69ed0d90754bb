// Package controllertest runs the WireGuard controller in tests and benchmarks as the
// component does, without its admin server: on the component's shared instruments, with its
// remotes' health probed, set up, then with one worker until stopped.
package controllertest

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Remotes writes the kubeconfig of each remote, by name, where the component reads it, in a
// directory of tb's, and loads them as the component does, with opts.
func Remotes(tb testing.TB, opts remote.ClientOptions, kubeconfigs map[string]string) []remote.Cluster {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "remotes")
	names := slices.Sorted(maps.Keys(kubeconfigs))
	for _, name := range names {
		testenv.WriteRemoteKubeconfig(tb, dir, name, kubeconfigs[name])
	}
	remotes, err := remote.LoadRemotes(dir, names, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return remotes
}

// Config is what a controller is run with.
type Config struct {
	Options controller.Options
	Local   kubernetes.Interface
	Remotes []remote.Cluster
	// Device is the device of the one remote; Devices are the host's.
	Device  controller.RemoteDevice
	Devices controller.Devices
	// ProbeInterval is how often the remotes' health is probed.
	ProbeInterval time.Duration
	// Stats, when set, holds the per-peer statistics instead of Running.Registry: they are read
	// from the device whenever their registry is gathered.
	Stats prometheus.Registerer
	Log   *slog.Logger
}

// Running is a controller running in the background until Stop.
type Running struct {
	*controller.Peering
	// Registry holds the controller's metrics and its remotes' health.
	Registry *prometheus.Registry

	cancel context.CancelFunc
	done   chan struct{}
}

// Start builds the controller of cfg, sets it up and runs it, failing tb on an error.
func Start(tb testing.TB, cfg Config) *Running {
	tb.Helper()
	reg := prometheus.NewRegistry()
	stats := cfg.Stats
	if stats == nil {
		stats = reg
	}
	in := daemon.NewInstruments(reg, "semaphore_wg", cfg.ProbeInterval, cfg.Log)
	in.Health.AddClusters(cfg.Remotes)
	ctrl, err := controller.New(cfg.Options, cfg.Local, cfg.Remotes, []controller.RemoteDevice{cfg.Device},
		cfg.Devices, in.Health, controller.NewMetrics(in.Factory, stats), in.Queue, cfg.Log)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ctrl.Setup(ctx); err != nil {
		cancel()
		tb.Fatal(err)
	}
	r := &Running{Peering: ctrl, Registry: reg, cancel: cancel, done: make(chan struct{})}
	go func() { ctrl.Run(ctx, 1); close(r.done) }()
	go in.Health.Run(ctx)
	return r
}

// Stop stops the controller and waits for it to return; later calls do nothing.
func (r *Running) Stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}
