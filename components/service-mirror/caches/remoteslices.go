// Package caches holds the informers that the service mirror's controllers share: one watch
// of the local mirror namespace, and one EndpointSlice informer per remote cluster, next to
// which each controller watches the Services of a remote it selects (Select); and the informer
// transforms of what the service mirror reads and never writes (TrimService, TrimSlice).
package caches

import (
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// RemoteSlices holds one EndpointSlice informer per remote cluster, indexed by Service, for
// every controller of the service mirror that reads them: the mirrors and the global services
// each read every remote's slices, and one watch and one cache of them is enough. The
// informers are made on first use.
type RemoteSlices struct {
	resync time.Duration

	mu        sync.Mutex
	factories map[string]informers.SharedInformerFactory
}

// NewRemoteSlices returns no informers yet; they re-list every resync (0 disables).
func NewRemoteSlices(resync time.Duration) *RemoteSlices {
	return &RemoteSlices{resync: resync, factories: map[string]informers.SharedInformerFactory{}}
}

// For returns r's factory (to start, and wait for) and its EndpointSlice informer, indexed by
// mirror.ByServiceName, its slices trimmed (TrimSlice). Every caller gets the same ones;
// they must ask before the factory starts, as indexers cannot be added to a running informer.
func (s *RemoteSlices) For(r remote.Cluster) (informers.SharedInformerFactory, cache.SharedIndexInformer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.factories[r.Name]
	if !ok {
		f = informers.NewSharedInformerFactoryWithOptions(r.Client, s.resync, informers.WithTransform(TrimSlice))
		s.factories[r.Name] = f
	}
	inf := f.Discovery().V1().EndpointSlices().Informer()
	if _, indexed := inf.GetIndexer().GetIndexers()[mirror.ByServiceName]; !indexed {
		if err := inf.AddIndexers(cache.Indexers{mirror.ByServiceName: mirror.IndexByServiceName}); err != nil {
			panic(err) // only when already started, which is a programming error
		}
	}
	return f, inf
}
