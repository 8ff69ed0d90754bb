package app

import (
	"context"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/components/service-mirror/adopt"
	"github.com/kube-semaphore/semaphore/components/service-mirror/globalcontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirrorcontroller"
	"github.com/kube-semaphore/semaphore/components/service-mirror/withdraw"
)

// Controllers are what the service mirror runs while it leads: the mirrors, and the global
// services unless they are turned off (Global nil). Each has its own queue and workers.
type Controllers struct {
	// Adopter, when set, watches what the original tool left; it syncs before the controllers run.
	Adopter *adopt.Adopter
	Mirrors *mirrorcontroller.Controller
	Global  *globalcontroller.Controller
	// MCS serves the Multi-Cluster Services API, unless it is turned off (nil).
	MCS *mcscontroller.Controller
	// Withdraw applies the outage policy, every WithdrawInterval, while this replica leads.
	Withdraw         *withdraw.Tracker
	WithdrawInterval time.Duration
}

// Run runs both controllers with workers each until ctx is done.
func (c *Controllers) Run(ctx context.Context, workers int) {
	if !c.Adopter.Start(ctx) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.Withdraw.Run(ctx, c.WithdrawInterval) })
	wg.Go(func() { c.Mirrors.Run(ctx, workers) })
	if c.Global != nil {
		wg.Go(func() { c.Global.Run(ctx, workers) })
	}
	if c.MCS != nil {
		wg.Go(func() { c.MCS.Run(ctx, workers) })
	}
	wg.Wait()
}

// LocalSynced reports whether the local caches of both have synced, for /readyz.
func (c *Controllers) LocalSynced() bool {
	return c.Mirrors.LocalSynced() && (c.Global == nil || c.Global.LocalSynced()) && (c.MCS == nil || c.MCS.LocalSynced())
}

// ResyncRemotes reconciles again everything of every remote that synced, in both: the local
// ranges changed, and what the guard admits with them.
func (c *Controllers) ResyncRemotes() {
	c.Mirrors.ResyncRemotes()
	if c.Global != nil {
		c.Global.ResyncRemotes()
	}
	if c.MCS != nil {
		c.MCS.ResyncRemotes()
	}
}
