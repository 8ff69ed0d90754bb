// Package limit bounds how many of one remote's Services the service mirror acts on: of a
// remote's selected Services only the first Max, in namespace then name order, are mirrored
// (or contribute to global services); the others are left out, counted and logged. The order
// decides, not arrival: every replica and every restart leaves out the same ones, and a
// Service that is in stays in while others come and go after it in that order.
package limit

import (
	"cmp"
	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Values of the what label of the over-limit gauge.
const (
	WhatServices       = "services"
	WhatGlobalServices = "global_services"
)

// OverMetric is the gauge of the Services each remote has beyond a limit, by remote and what
// the limit bounds. Both controllers of the service mirror report on the one gauge.
func OverMetric(f *metrics.Factory) *prometheus.GaugeVec {
	return f.GaugeVec("over_limit",
		"Selected Services of a remote left out because the remote has more than a limit allows, by remote and what: "+
			WhatServices+" (SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE, not mirrored) or "+
			WhatGlobalServices+" (SEMAPHORE_GLOBAL_MAX_SERVICES_PER_REMOTE, contributing to no global service). "+
			"The first in namespace/name order are kept.", "remote", "what")
}

// Key is a Service's namespace and name: the order of a Set.
type Key struct {
	Namespace, Name string
}

func compare(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Admission is what a Set says of a key.
type Admission int

const (
	// Unknown is a key not in the set: not yet (the Set's handler has not seen it) or no longer.
	Unknown Admission = iota
	// Admitted is a key among the first most.
	Admitted
	// Over is a key in the set, beyond the first most.
	Over
)

// Set is the keys of one remote's selected Services in order, of which the first most are
// admitted. A nil Set admits every key. Its methods may be called from several goroutines.
type Set struct {
	most int

	mu   sync.RWMutex
	keys []Key // sorted by compare
}

// add inserts k, and returns the key it pushed beyond most, if any.
func (s *Set) add(k Key) (Key, bool) {
	return s.edit(k, func(i int, found bool) (Key, bool) {
		if found {
			return Key{}, false
		}
		s.keys = slices.Insert(s.keys, i, k)
		if i < s.most && len(s.keys) > s.most {
			return s.keys[s.most], true
		}
		return Key{}, false
	})
}

// remove deletes k, and returns the key it let within most, if any.
func (s *Set) remove(k Key) (Key, bool) {
	return s.edit(k, func(i int, found bool) (Key, bool) {
		if !found {
			return Key{}, false
		}
		s.keys = slices.Delete(s.keys, i, i+1)
		if i < s.most && len(s.keys) >= s.most {
			return s.keys[s.most-1], true
		}
		return Key{}, false
	})
}

// edit calls change, under the lock, with where k is or would be in the keys and whether it is
// there, and returns what change returns: the key whose admission the change moved, if any.
func (s *Set) edit(k Key, change func(i int, found bool) (Key, bool)) (Key, bool) {
	if s == nil {
		return Key{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearchFunc(s.keys, k, compare)
	return change(i, found)
}

// Admission says whether k is among the first most keys.
func (s *Set) Admission(k Key) Admission {
	if s == nil {
		return Admitted
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, found := slices.BinarySearchFunc(s.keys, k, compare)
	switch {
	case !found:
		return Unknown
	case i < s.most:
		return Admitted
	default:
		return Over
	}
}

// over is how many keys are beyond most, and the first of them.
func (s *Set) over() (int, Key) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.keys) <= s.most {
		return 0, Key{}
	}
	return len(s.keys) - s.most, s.keys[s.most]
}

// Handler keeps s in line with an informer of a remote's selected Services, and calls changed
// with every key whose admission may have changed: the object's own, and the one its arrival
// pushed beyond most or its departure let within. Objects ignore says are not the remote's own
// (ours) take no place. Add it before the informer starts, and count the remote as synced only
// once the registration has (ResourceEventHandlerRegistration.HasSynced): until then the Set
// does not hold every key, and a key missing from it is Unknown, not admitted.
func Handler(s *Set, ignore func(metav1.Object) bool, changed func(Key)) cache.ResourceEventHandler {
	update := func(obj any, deleted bool) {
		m, err := reconcile.MetaOf(obj)
		if err != nil {
			return
		}
		k := Key{Namespace: m.GetNamespace(), Name: m.GetName()}
		var other Key
		var moved bool
		if deleted || (ignore != nil && ignore(m)) {
			other, moved = s.remove(k)
		} else {
			other, moved = s.add(k)
		}
		changed(k)
		if moved {
			changed(other)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { update(obj, false) },
		UpdateFunc: func(_, obj any) { update(obj, false) },
		DeleteFunc: func(obj any) { update(obj, true) },
	}
}

// PerRemote is one limit, the same for every remote: its Sets, one per remote, and the report of
// what is over it.
type PerRemote struct {
	most     int
	what     string
	variable string
	gauge    *prometheus.GaugeVec
	log      *slog.Logger
	sets     map[string]*Set

	mu sync.Mutex
	// reported is the count over the limit last logged, by remote.
	reported map[string]int
}

// New returns a limit of most Services per remote, reported on gauge with what, and logged
// naming variable, its setting.
func New(most int, what, variable string, gauge *prometheus.GaugeVec, log *slog.Logger) *PerRemote {
	return &PerRemote{most: most, what: what, variable: variable, gauge: gauge, log: log, sets: map[string]*Set{}, reported: map[string]int{}}
}

// For returns the Set of remote, made on first use; its gauge is exported at zero from then on.
// Call it before the controllers run. A nil PerRemote returns nil: a Set that admits everything.
func (l *PerRemote) For(remote string) *Set {
	if l == nil {
		return nil
	}
	s, ok := l.sets[remote]
	if !ok {
		s = &Set{most: l.most}
		l.sets[remote] = s
		l.gauge.WithLabelValues(remote, l.what).Set(0)
	}
	return s
}

// Report sets the gauge of every remote, and logs a remote whose count over the limit changed
// since it was last logged: at most once per call, however many Services come and go between
// two, so that a remote creating Services by the thousand does not flood the log.
func (l *PerRemote) Report() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for remote, s := range l.sets {
		n, first := s.over()
		l.gauge.WithLabelValues(remote, l.what).Set(float64(n))
		if n == l.reported[remote] {
			continue
		}
		l.reported[remote] = n
		if n == 0 {
			l.log.Info("remote no longer has more Services than its limit", "remote", remote, "what", l.what, "limit", l.most, "setting", l.variable)
			continue
		}
		l.log.Warn("remote has more Services than its limit: the first in namespace/name order are kept, the others left out",
			"remote", remote, "what", l.what, "limit", l.most, "over", n, "first_left_out", first.Namespace+"/"+first.Name, "setting", l.variable)
	}
}
