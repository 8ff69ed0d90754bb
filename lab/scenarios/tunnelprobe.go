package scenarios

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// handshakeInterval is WireGuard's REKEY_TIMEOUT: how long a peer waits for the answer to a
// handshake before it sends another. A tunnel down for longer than that has missed a
// handshake, which is what "down for longer than one handshake interval" means.
const handshakeInterval = 5 * time.Second

// probeEvery is how often the tunnel probe pings each pair; a gap is known to this much.
const probeEvery = 200 * time.Millisecond

// tunnelPair is two workload pods on nodes of different clusters: pinging from one to the
// other crosses the tunnel between their nodes.
type tunnelPair struct {
	from, to layout.Pod
	netns    string // from's network namespace
}

func (p tunnelPair) String() string {
	return fmt.Sprintf("%s (%s) -> %s (%s)", p.from.Node, p.from.IP, p.to.Node, p.to.IP)
}

// tunnelProbe pings across the tunnels between every two nodes of different clusters, from a
// workload pod on one to a workload pod on the other, every probeEvery, and keeps the send
// time of every answered ping.
type tunnelProbe struct {
	pairs []tunnelPair
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup

	mu       sync.Mutex
	answered [][]time.Time // by pair
}

// tunnelPairs is one pair for every two nodes of different clusters that both run a workload
// pod (not a controller, which an upgrade replaces, nor a pod on its node's network, whose
// address no tunnel carries): the first pod by name of each node.
func tunnelPairs(rec *layout.Record) []tunnelPair {
	nodeIPs := map[string]bool{}
	for _, n := range rec.Nodes.Nodes {
		nodeIPs[n.InternalIP] = true
	}
	byNode := map[string]layout.Pod{}
	for _, p := range rec.Pods {
		a, err := netip.ParseAddr(p.IP)
		if err != nil || !a.Is4() || nodeIPs[p.IP] || p.Namespace == layout.SemaphoreNamespace {
			continue
		}
		if q, ok := byNode[p.Node]; !ok || p.Name < q.Name {
			byNode[p.Node] = p
		}
	}
	var pairs []tunnelPair
	for _, from := range byNode {
		for _, to := range byNode {
			if from.Cluster != to.Cluster {
				pairs = append(pairs, tunnelPair{from: from, to: to})
			}
		}
	}
	slices.SortFunc(pairs, func(a, b tunnelPair) int {
		return cmp.Or(cmp.Compare(a.from.Node, b.from.Node), cmp.Compare(a.to.Node, b.to.Node))
	})
	return pairs
}

// startTunnelProbe finds the pairs whose ping is answered now (a few tries each; a Calico
// policy or a pod gone since it was recorded leaves a pair out, as skipped says) and starts
// pinging them.
func startTunnelProbe(rec *layout.Record) (probe *tunnelProbe, skipped []string) {
	probe = &tunnelProbe{stop: make(chan struct{})}
	for _, p := range tunnelPairs(rec) {
		netns, err := testbed.PodNetns(p.from.UID)
		if err == nil {
			err = answers(netns, p, 3)
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		p.netns = netns
		probe.pairs = append(probe.pairs, p)
	}
	probe.answered = make([][]time.Time, len(probe.pairs))
	probe.start = time.Now()
	for i := range probe.pairs {
		probe.done.Go(func() { probe.run(i) })
	}
	return probe, skipped
}

// answers pings p up to tries times, a second each, and returns the last error when none was
// answered.
func answers(netns string, p tunnelPair, tries int) error {
	var err error
	for range tries {
		if _, err = testbed.Ping(netns, p.from.IP, p.to.IP, time.Second); err == nil {
			return nil
		}
	}
	return err
}

// run pings pair i every probeEvery until stopped, each ping in its own goroutine so that one
// waiting for its answer does not delay the next.
func (t *tunnelProbe) run(i int) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	var pings sync.WaitGroup
	defer pings.Wait()
	p := t.pairs[i]
	for {
		select {
		case <-t.stop:
			return
		case sent := <-tick.C:
			pings.Go(func() {
				if _, err := testbed.Ping(p.netns, p.from.IP, p.to.IP, time.Second); err == nil {
					t.mu.Lock()
					t.answered[i] = append(t.answered[i], sent)
					t.mu.Unlock()
				}
			})
		}
	}
}

// tunnelGap is the longest time a pair's pings went unanswered.
type tunnelGap struct {
	pair    tunnelPair
	longest time.Duration
}

// finish stops the probe and returns each pair's longest gap, longest first.
func (t *tunnelProbe) finish() []tunnelGap {
	end := time.Now()
	close(t.stop)
	t.done.Wait()
	gaps := make([]tunnelGap, len(t.pairs))
	for i, p := range t.pairs {
		slices.SortFunc(t.answered[i], time.Time.Compare)
		gaps[i] = tunnelGap{pair: p, longest: longestGap(t.start, end, t.answered[i])}
	}
	slices.SortStableFunc(gaps, func(a, b tunnelGap) int { return int(b.longest - a.longest) })
	return gaps
}

// longestGap is the longest time between start, the sorted answered send times and end,
// less the probe's own interval: between two answered pings probeEvery apart the tunnel was
// not down at all.
func longestGap(start, end time.Time, answered []time.Time) time.Duration {
	var longest time.Duration
	last := start
	for _, at := range append(answered, end) {
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(0, longest-probeEvery)
}
