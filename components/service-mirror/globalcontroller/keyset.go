package globalcontroller

import (
	"sync"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// keySet is a set of global services, safe for concurrent use.
type keySet struct {
	mu   sync.Mutex
	keys map[global.Key]bool
}

func (s *keySet) add(k global.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[global.Key]bool{}
	}
	s.keys[k] = true
}

// take empties the set and returns what it held.
func (s *keySet) take() []global.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]global.Key, 0, len(s.keys))
	for k := range s.keys {
		out = append(out, k)
	}
	s.keys = nil
	return out
}
