package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon/logging"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/uninstall"
)

// Uninstalling is a component in the uninstall mode (SEMAPHORE_UNINSTALL): it reads no remote
// and elects no leader (every replica removes, and removing twice is harmless); it runs Remove
// until one pass succeeds, and only then reports ready, which is what the pre-delete hook
// waits for. Then it idles until Helm deletes its workload.
type Uninstalling struct {
	*Base
	// Remove removes everything the component made; it is called again after an error.
	Remove func(context.Context) error
	done   atomic.Bool
}

// NewUninstalling builds the base of a component in the uninstall mode.
func NewUninstalling(name, metricsPrefix string, shared config.Shared, log *slog.Logger) (*Uninstalling, error) {
	shared.Remotes = nil
	base, err := New(name, metricsPrefix, shared, config.LeaderElection{}, log)
	if err != nil {
		return nil, err
	}
	return &Uninstalling{Base: base}, nil
}

// NewDeletingOwned builds a component in the uninstall mode that deletes what it wrote to the
// local cluster: the objects of kinds that carry its managed-by label (deleteOwned).
func NewDeletingOwned(name, metricsPrefix string, cfg config.Elected, kinds []uninstall.Owned, log *slog.Logger) (*Uninstalling, error) {
	u, err := NewUninstalling(name, metricsPrefix, cfg.Shared, log)
	if err != nil {
		return nil, err
	}
	if err := u.deleteOwned(kinds, cfg.LeaderElection); err != nil {
		return nil, err
	}
	return u, nil
}

// deleteOwned makes Remove delete the objects of kinds that carry the component's managed-by
// label, kind by kind in the order given, and then its Lease when it elects a leader.
func (u *Uninstalling) deleteOwned(kinds []uninstall.Owned, election config.LeaderElection) error {
	dyn, err := dynamic.NewForConfig(u.LocalConfig)
	if err != nil {
		return fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %w", err)
	}
	u.Remove = func(ctx context.Context) error {
		for _, o := range kinds {
			n, err := uninstall.DeleteOwned(ctx, dyn, o)
			if err != nil {
				return err
			}
			u.Log.Info("deleted what the component made", "resource", o.Resource.Resource, "namespace", o.Namespace, "objects", n)
		}
		if !election.Enabled {
			return nil
		}
		return uninstall.DeleteLease(ctx, u.Local, election.Namespace, election.LeaseName)
	}
	return nil
}

// Starting are the attributes of the line logged when the component starts.
func (u *Uninstalling) Starting() []any {
	return []any{"mode", "uninstall", "admin", u.AdminAddr()}
}

// retryLimit is the longest wait between two removal passes.
const retryLimit = 30 * time.Second

// Run serves the admin endpoints and removes, retrying with a growing pause, until ctx is done.
func (u *Uninstalling) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u.admin.AddReadyCheck("uninstall", func() error {
		if !u.done.Load() {
			return errors.New("still removing what the component made")
		}
		return nil
	})
	serveErr := u.serveAdmin(ctx, cancel)
	u.removeUntilDone(ctx)
	<-ctx.Done()
	cancel()
	return <-serveErr
}

// removeUntilDone calls Remove until it succeeds or ctx is done.
func (u *Uninstalling) removeUntilDone(ctx context.Context) {
	for pause := time.Second; ; pause = min(2*pause, retryLimit) {
		err := u.Remove(ctx)
		if err == nil {
			u.done.Store(true)
			u.Log.Info("removed everything the component made; idle until the workload is deleted")
			return
		}
		u.Log.Warn("removing what the component made failed; retrying", "err", err, "retry_in", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

// runHook is the body of `<component> uninstall-hook`: the pre-delete hook, configured by the
// SEMAPHORE_UNINSTALL_* variables, with the pod's in-cluster credentials.
func runHook(ctx context.Context, name string) error {
	log := logging.Setup(os.Stderr, slog.LevelInfo, name)
	h, err := uninstall.HookFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg, err := remote.LocalConfig("", remote.ClientOptions{UserAgent: name + "-uninstall-hook"})
	if err != nil {
		return err
	}
	if h.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	h.Log = log
	return h.Run(ctx)
}
