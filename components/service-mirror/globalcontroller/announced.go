package globalcontroller

import (
	"slices"
	"sync"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// announced remembers, by global service, the clusters whose definition differs from the one
// used, and the zone count last reported for local-first routing that cannot work: each is
// announced (logged, an Event) when it changes, not on every sync.
type announced struct {
	mu     sync.Mutex
	byKey  map[global.Key][]string
	noZone map[global.Key]int
}

func newAnnounced() *announced {
	return &announced{byKey: map[global.Key][]string{}, noZone: map[global.Key]int{}}
}

// conflicts records the conflicting clusters of k and reports whether they changed.
func (c *announced) conflicts(k global.Key, clusters []string) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.byKey[k]
	if len(clusters) == 0 {
		delete(c.byKey, k)
		return known
	}
	c.byKey[k] = slices.Clone(clusters)
	return !slices.Equal(old, clusters)
}

// noZones records that local-first routing of k cannot work with zones zones, and reports
// whether that is news.
func (c *announced) noZones(k global.Key, zones int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.noZone[k]
	c.noZone[k] = zones
	return !known || old != zones
}

// forget drops what is recorded of k, a global service that is gone.
func (c *announced) forget(k global.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byKey, k)
	delete(c.noZone, k)
}

// byCluster counts, by cluster, the global services it conflicts on.
func (c *announced) byCluster() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, clusters := range c.byKey {
		for _, cl := range clusters {
			out[cl]++
		}
	}
	return out
}
