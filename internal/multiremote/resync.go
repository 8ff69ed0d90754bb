package multiremote

// ResyncRemotes enqueues, for every remote whose caches have synced, what it enqueues once they
// have (Config.OnRemoteSynced): everything of it is reconciled again. The guard's local ranges
// changed, say: what it refused may be admitted now, and what it admitted refused.
func (c *Controller[K]) ResyncRemotes() {
	for _, r := range c.remotes {
		if r.Ready() {
			c.cfg.OnRemoteSynced(r)
		}
	}
}
