package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/metrics"
)

// Health tracks, for each remote, whether its API server answers, whether the component's
// caches of it have synced, and who the component is there. It exports <prefix>_remote_up,
// <prefix>_remote_last_sync_timestamp_seconds and <prefix>_remote_identity_info. Remote health
// is never readiness.
type Health struct {
	interval time.Duration
	timeout  time.Duration
	log      *slog.Logger
	up       *prometheus.GaugeVec
	lastSync *prometheus.GaugeVec
	identity *prometheus.GaugeVec

	mu      sync.Mutex
	remotes map[string]*remoteState
}

type remoteState struct {
	probe  func(context.Context) error
	synced bool
	err    error // last probe result; nil when the last probe succeeded
	probed bool
	// lastSync is when the view was last known current (what the lastSync gauge shows).
	lastSync time.Time
	// whoAmI asks the remote who the component is (nil: not asked); askWho is set until it has
	// been asked since the remote last answered after a failure (identity.go).
	whoAmI func(context.Context) (string, error)
	askWho bool
}

// NewHealth creates the per-remote health metrics on f. Remotes are probed every interval.
func NewHealth(f *metrics.Factory, interval time.Duration, log *slog.Logger) *Health {
	return &Health{
		interval: interval,
		timeout:  max(interval, time.Second),
		log:      log,
		up:       f.GaugeVec("remote_up", "1 when the remote cluster's API server answered the last probe, 0 otherwise.", "remote"),
		lastSync: f.GaugeVec("remote_last_sync_timestamp_seconds", "Unix time at which the component last knew its view of the remote to be current: caches synced and the API server answering.", "remote"),
		identity: f.GaugeVec("remote_identity_info", "A constant 1 labelled with the user the component's credentials are at the remote (a SelfSubjectReview, asked when the remote first answers and again after it failed); absent until known, and removed when the remote rejects the credentials.", "remote", "user"),
		remotes:  map[string]*remoteState{},
	}
}

// probeReadyz returns a probe that asks a cluster's API server for /readyz, which every
// authenticated identity may read.
func probeReadyz(c Cluster) func(context.Context) error {
	return func(ctx context.Context) error {
		return c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
}

// AddClusters starts tracking each of clusters through its API server's /readyz (ProbeReadyz),
// and who the component is there (a SelfSubjectReview once it answers).
func (h *Health) AddClusters(clusters []Cluster) {
	for _, c := range clusters {
		h.add(c.Name, probeReadyz(c), func(ctx context.Context) (string, error) {
			return WhoAmI(ctx, c.Client, "")
		})
	}
}

// Add starts tracking a remote. It counts as down until its first probe succeeds.
func (h *Health) Add(name string, probe func(context.Context) error) {
	h.add(name, probe, nil)
}

// add starts tracking a remote, asking whoAmI who the component is there once it answers
// (never when nil).
func (h *Health) add(name string, probe func(context.Context) error, whoAmI func(context.Context) (string, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remotes[name] = &remoteState{probe: probe, whoAmI: whoAmI, askWho: whoAmI != nil}
	h.up.WithLabelValues(name).Set(0)
	h.lastSync.WithLabelValues(name)
}

// MarkSynced records that the component's caches of a remote have synced.
func (h *Health) MarkSynced(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.remotes[name]; ok {
		s.synced = true
		if s.probed && s.err == nil {
			h.markCurrent(name, s)
		}
	}
}

// isUp reports whether the remote answered its last probe.
func (h *Health) isUp(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.remotes[name]
	return ok && s.probed && s.err == nil
}

// Check says what keeps a remote's view from being current: nil when it answered its last probe
// and its caches synced. It is for logs and the withdraw policy, never for readiness.
func (h *Health) Check(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.remotes[name]
	switch {
	case !ok:
		return errors.New("unknown remote")
	case !s.probed:
		return errors.New("not probed yet")
	case s.err != nil:
		return fmt.Errorf("unreachable: %w", s.err)
	case !s.synced:
		return errors.New("caches not synced yet")
	}
	return nil
}

// markCurrent records that the view of a remote is current now. h.mu must be held.
func (h *Health) markCurrent(name string, s *remoteState) {
	s.lastSync = time.Now()
	h.lastSync.WithLabelValues(name).Set(float64(s.lastSync.UnixNano()) / 1e9)
}

// LastSync is when the view of a remote was last known current (caches synced and the API
// server answering); zero if it never was.
func (h *Health) LastSync(name string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.remotes[name]; ok {
		return s.lastSync
	}
	return time.Time{}
}

// names returns the tracked remotes, sorted.
func (h *Health) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.remotes))
	for n := range h.remotes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run probes every remote each interval until ctx is done.
func (h *Health) Run(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.probeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Health) probeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, name := range h.names() {
		h.mu.Lock()
		probe := h.remotes[name].probe
		h.mu.Unlock()
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, h.timeout)
			err := probe(pctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			h.record(name, err)
			if err == nil {
				h.learnIdentity(ctx, name)
			}
		})
	}
	wg.Wait()
}

func (h *Health) record(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.remotes[name]
	wasUp := s.probed && s.err == nil
	s.probed, s.err = true, err
	if err != nil {
		h.forgetIdentity(name, s, err)
		h.up.WithLabelValues(name).Set(0)
		if wasUp || !s.synced {
			h.log.Warn("remote unreachable", "remote", name, "err", err)
		}
		return
	}
	h.up.WithLabelValues(name).Set(1)
	if s.synced {
		h.markCurrent(name, s)
	}
	if !wasUp {
		h.log.Info("remote reachable", "remote", name)
	}
}
