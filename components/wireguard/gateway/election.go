// Package gateway elects, of a cluster's gateway nodes, its active gateway toward each remote
// that the cluster reaches through gateways: the node whose agent holds that remote's Lease.
// The term of its election (one more than the Lease's holder transitions) grows with every
// change of holder, so that of two nodes that both say they are the gateway (one cut off from
// its API server cannot take its word back), the later one's term is the higher.
package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Timing is how quickly an election notices a lost gateway: a gateway that has not renewed its
// Lease for LeaseDuration is replaced by a standby at its next try (every RetryPeriod); a
// gateway that cannot renew for RenewDeadline stops being one first, so that two never act
// at once.
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultTiming replaces a lost gateway within about 7 seconds (LeaseDuration and one
// RetryPeriod); one that stops on purpose releases its Lease and is replaced within one
// RetryPeriod.
var DefaultTiming = Timing{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}

// LeaseName is the name of the Lease of the gateway toward remote.
func LeaseName(remote string) string { return "semaphore-wireguard-gateway-" + remote }

// Election is one node's part in the election of the gateway toward one remote.
type Election struct {
	remote  string
	lock    *resourcelock.LeaseLock
	timing  Timing
	log     *slog.Logger
	changed func()

	mu     sync.Mutex
	active bool
	term   uint64
}

// NewElection is node's part in the election of the gateway toward remote, through a Lease in
// namespace; changed is called whenever this node becomes the gateway or stops being it.
func NewElection(client kubernetes.Interface, namespace, remote, node string, timing Timing, log *slog.Logger, changed func()) *Election {
	return &Election{
		remote: remote,
		lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: LeaseName(remote)},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: node},
		},
		timing: timing, log: log.With("remote", remote, "lease", namespace+"/"+LeaseName(remote)), changed: changed,
	}
}

// State says whether this node is the active gateway, and the term of its election.
func (e *Election) State() (active bool, term uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active, e.term
}

// Run takes part in the election until ctx is done: a node that loses the Lease stands again.
// When ctx is done the active gateway releases the Lease, so that a standby takes over at its
// next try rather than after LeaseDuration.
func (e *Election) Run(ctx context.Context) {
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            e.lock,
			LeaseDuration:   e.timing.LeaseDuration,
			RenewDeadline:   e.timing.RenewDeadline,
			RetryPeriod:     e.timing.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.lock.LeaseMeta.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: e.lead,
				OnStoppedLeading: e.stop,
				OnNewLeader: func(identity string) {
					if identity != e.lock.Identity() {
						e.log.Info("another node is the gateway", "gateway", identity)
					}
				},
			},
		})
		if err != nil {
			e.log.Error("cannot take part in the election of the gateway", "err", err)
			return
		}
		elector.Run(ctx)
	}
}

// lead makes this node the gateway once it has read the term of its election.
func (e *Election) lead(ctx context.Context) {
	var term uint64
	err := wait.PollUntilContextCancel(ctx, e.timing.RetryPeriod, true, func(ctx context.Context) (bool, error) {
		record, _, err := e.lock.Get(ctx)
		if err != nil || record.HolderIdentity != e.lock.Identity() {
			return false, nil //nolint:nilerr // asked again until the lease is lost
		}
		term = uint64(max(record.LeaderTransitions, 0)) + 1
		return true, nil
	})
	if err != nil {
		return
	}
	e.mu.Lock()
	e.active, e.term = true, term
	e.mu.Unlock()
	e.log.Info("this node is the gateway", "term", term)
	e.changed()
}

// stop makes this node a standby.
func (e *Election) stop() {
	e.mu.Lock()
	was := e.active
	e.active = false
	e.mu.Unlock()
	if was {
		e.log.Info("this node is no longer the gateway")
		e.changed()
	}
}
