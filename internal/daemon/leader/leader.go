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

// errLostLeadership is returned by Run when this replica lost the lease before ctx was done.
// The usual answer is to exit and let the replica be restarted as a candidate.
var errLostLeadership = errors.New("lost leadership")

// Run calls run while this replica leads, or straight away when election is disabled.
//
// run's context is cancelled when ctx is done or leadership is lost, and the lease is released
// only after run has returned: a successor never starts while this replica may still write.
func Run(ctx context.Context, cfg config.LeaderElection, client kubernetes.Interface, log *slog.Logger, run func(context.Context)) error {
	if !cfg.Enabled {
		run(ctx)
		return nil
	}
	// The elector runs on its own context so that cancelling ctx first stops run and only then
	// releases the lease.
	electCtx, stopElecting := context.WithCancel(context.Background())
	defer stopElecting()
	e := &election{ctx: ctx, cfg: cfg, log: log, run: run, stopElecting: stopElecting}
	stop := context.AfterFunc(ctx, func() {
		if !e.isLeading() {
			stopElecting()
		}
	})
	defer stop()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  v1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.LeaseName},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.LeaseName,
		Callbacks:       e.callbacks(),
	})
	if err != nil {
		return err
	}
	elector.Run(electCtx)
	if ctx.Err() == nil && e.isLeading() {
		return errLostLeadership
	}
	return nil
}

// election is one Run's state: whether this replica has started leading, which it does at most
// once (the elector stops once run returns).
type election struct {
	ctx          context.Context
	cfg          config.LeaderElection
	log          *slog.Logger
	run          func(context.Context)
	stopElecting context.CancelFunc

	mu      sync.Mutex
	leading bool
}

func (e *election) isLeading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// callbacks run run while this replica leads, and log who leads.
func (e *election) callbacks() leaderelection.LeaderCallbacks {
	lease := e.cfg.Namespace + "/" + e.cfg.LeaseName
	return leaderelection.LeaderCallbacks{
		OnStartedLeading: e.lead,
		OnStoppedLeading: func() {
			e.log.Info("stopped leading", "lease", lease, "identity", e.cfg.Identity)
		},
		OnNewLeader: func(identity string) {
			if identity != e.cfg.Identity {
				e.log.Info("another replica leads", "leader", identity)
			}
		},
	}
}

// lead runs run on a context that ends with leadCtx or Run's, then stops the election; when
// Run's context ended before the lease was won, it only stops the election.
func (e *election) lead(leadCtx context.Context) {
	e.mu.Lock()
	if e.ctx.Err() != nil {
		e.mu.Unlock()
		e.stopElecting()
		return
	}
	e.leading = true
	e.mu.Unlock()
	e.log.Info("started leading", "lease", e.cfg.Namespace+"/"+e.cfg.LeaseName, "identity", e.cfg.Identity)
	runCtx, cancel := context.WithCancel(leadCtx)
	stopRun := context.AfterFunc(e.ctx, cancel)
	e.run(runCtx)
	stopRun()
	cancel()
	e.stopElecting()
}
