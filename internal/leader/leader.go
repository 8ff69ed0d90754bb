// Package leader runs a function only while this replica holds a Lease, so that of several
// replicas exactly one writes.
package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-semaphore/semaphore/internal/config"
)

// ErrLostLeadership is returned by Run when this replica lost the lease before ctx was done.
// The usual answer is to exit and let the replica be restarted as a candidate.
var ErrLostLeadership = errors.New("lost leadership")

// Run calls run while this replica leads, or straight away when election is disabled.
//
// run's context is cancelled when ctx is done or leadership is lost, and the lease is released
// only after run has returned: a successor never starts while this replica may still write.
func Run(ctx context.Context, cfg config.LeaderElection, client kubernetes.Interface, log *slog.Logger, run func(context.Context)) error {
	if !cfg.Enabled {
		run(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  v1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}

	// The elector runs on its own context so that cancelling ctx first stops run and only then
	// releases the lease.
	electCtx, stopElecting := context.WithCancel(context.Background())
	defer stopElecting()
	var mu sync.Mutex
	leading := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopElecting()
		}
	})
	defer stop()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if ctx.Err() != nil {
					mu.Unlock()
					stopElecting()
					return
				}
				leading = true
				mu.Unlock()
				log.Info("started leading", "lease", cfg.Namespace+"/"+cfg.LeaseName, "identity", cfg.Identity)
				runCtx, cancel := context.WithCancel(leadCtx)
				stopRun := context.AfterFunc(ctx, cancel)
				run(runCtx)
				stopRun()
				cancel()
				stopElecting()
			},
			OnStoppedLeading: func() {
				log.Info("stopped leading", "lease", cfg.Namespace+"/"+cfg.LeaseName, "identity", cfg.Identity)
			},
			OnNewLeader: func(identity string) {
				if identity != cfg.Identity {
					log.Info("another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(electCtx)
	if ctx.Err() == nil {
		mu.Lock()
		wasLeading := leading
		mu.Unlock()
		if wasLeading {
			return ErrLostLeadership
		}
	}
	return nil
}
