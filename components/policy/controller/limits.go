package controller

import (
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/policy/netset"
)

// What over_limit counts beyond each limit: the label values of its what label.
const (
	overSets    = "sets"
	overMembers = "members"
)

// limits keeps one remote within the limits, the same way every time whatever order the sets
// sync in: of the sets its pods would make (those with an address), the first max sets by name
// are made and the others left out; of a set's addresses, the first max members by address go in.
//
// Each sync tells it whether its set has addresses. The ranking changes only then, and at most
// one other set crosses the limit with it (pushed out by a set that ranks before it, or let in
// by one that went): the sync enqueues that one. The ranking starts from the whole cache, read
// on the first sync after the remote's caches synced, so that a set synced early does not take
// the place of one that ranks before it but has not synced yet.
type limits struct {
	remote     string
	maxSets    int
	maxMembers int
	gauge      *prometheus.GaugeVec // over_limit{remote, what}

	mu      sync.Mutex
	started bool
	names   []string                 // sorted names of the sets with addresses
	sources map[string]netset.Source // by name: what to enqueue when a set crosses the limit
	// leftOut are the sets left out whole, logged once when they were first; membersLeftOut the
	// addresses left out of each set made, and their sum.
	leftOut        map[string]bool
	membersLeftOut map[string]int
	membersTotal   int
}

func newLimits(remote string, maxSets, maxMembers int, gauge *prometheus.GaugeVec) *limits {
	l := &limits{remote: remote, maxSets: maxSets, maxMembers: maxMembers, gauge: gauge,
		sources: map[string]netset.Source{}, leftOut: map[string]bool{}, membersLeftOut: map[string]int{}}
	// Zero before the first sync, so that an alert sees 0 rather than no data.
	gauge.WithLabelValues(remote, overSets).Set(0)
	gauge.WithLabelValues(remote, overMembers).Set(0)
	return l
}

// start ranks the sets that have addresses, once: withAddresses lists them from the caches.
// Must be called with mu held.
func (l *limits) start(withAddresses func() []netset.Source) {
	if l.started {
		return
	}
	l.started = true
	for _, src := range withAddresses() {
		name := netset.SetName(src)
		l.sources[name] = src
		l.names = append(l.names, name)
	}
	slices.Sort(l.names)
	l.names = slices.Compact(l.names)
}

// place records whether the set of src has addresses and reports whether it is made (within
// maxSets) and whether it was left out now for the first time; crossed is the other set, if
// any, that this moved across the limit, to be synced again.
func (l *limits) place(src netset.Source, hasAddresses bool, withAddresses func() []netset.Source) (within, newlyLeftOut bool, crossed *netset.Source) {
	name := netset.SetName(src)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start(withAddresses)
	i, found := slices.BinarySearch(l.names, name)
	switch {
	case hasAddresses && !found:
		l.names = slices.Insert(l.names, i, name)
		l.sources[name] = src
		if i < l.maxSets && len(l.names) > l.maxSets {
			crossed = l.sourceAt(l.maxSets) // pushed out
		}
	case !hasAddresses && found:
		l.names = slices.Delete(l.names, i, i+1)
		delete(l.sources, name)
		if i < l.maxSets && len(l.names) >= l.maxSets {
			crossed = l.sourceAt(l.maxSets - 1) // let in
		}
	}
	within = hasAddresses && i < l.maxSets
	if hasAddresses && !within {
		newlyLeftOut = !l.leftOut[name]
		l.leftOut[name] = true
	} else {
		delete(l.leftOut, name)
	}
	if !within {
		l.setMembersLeftOut(name, 0)
	}
	l.gauge.WithLabelValues(l.remote, overSets).Set(float64(max(0, len(l.names)-l.maxSets)))
	return within, newlyLeftOut, crossed
}

func (l *limits) sourceAt(i int) *netset.Source {
	src := l.sources[l.names[i]]
	return &src
}

// members keeps the first maxMembers of a made set's nets (sorted by address) and reports how
// many it left out and whether it left any out now for the first time.
func (l *limits) members(src netset.Source, nets []string) (kept []string, leftOut int, newly bool) {
	leftOut = max(0, len(nets)-l.maxMembers)
	l.mu.Lock()
	defer l.mu.Unlock()
	before := l.setMembersLeftOut(netset.SetName(src), leftOut)
	return nets[:len(nets)-leftOut], leftOut, leftOut > 0 && before == 0
}

// setMembersLeftOut records the addresses left out of the set name and returns those recorded
// before. Must be called with mu held.
func (l *limits) setMembersLeftOut(name string, n int) int {
	before := l.membersLeftOut[name]
	if n == 0 {
		delete(l.membersLeftOut, name)
	} else {
		l.membersLeftOut[name] = n
	}
	l.membersTotal += n - before
	l.gauge.WithLabelValues(l.remote, overMembers).Set(float64(l.membersTotal))
	return before
}

// sourceOfKey is the source of a bySet index key of remote: namespace/value (a namespace has no
// slash).
func sourceOfKey(remote, key string) netset.Source {
	ns, name, _ := strings.Cut(key, "/")
	return netset.Source{Cluster: remote, Namespace: ns, Name: name}
}

// orUnlimited is a limit of Options, 0 for none.
func orUnlimited(limit int) int {
	if limit <= 0 {
		return math.MaxInt
	}
	return limit
}
