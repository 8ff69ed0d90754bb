package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-semaphore/semaphore/lab/env"
)

const (
	soakNamespace = "soak"
	// soakApp's pods back the mirrored and global Services and form a network set; soakBatch's
	// form a set that empties and fills again (zero replicas: no set).
	soakApp              = "soak-app"
	soakBatch            = "soak-batch"
	soakPort       int32 = 8080
	soakChurnEvery       = 2 * time.Second
	soakCutEvery         = time.Minute
	soakCutFor           = 20 * time.Second
	soakKillEvery        = 2 * time.Minute
	// soakMaxServices is how many mirrored Services a cluster holds at most; soakGlobals how
	// many global services there are (each in any of the clusters).
	soakMaxServices = 4
	soakGlobals     = 3
	// soakSettle bounds the wait for the clusters' workloads after the churn, soakConverge the
	// wait for the mesh to equal them, soakQuiet the wait for the alerts to be quiet again.
	soakSettle   = 3 * time.Minute
	soakConverge = 2 * time.Minute
	soakQuiet    = 5 * time.Minute
)

// soakRun is one soak: what the churn holds in each cluster, and what it did.
type soakRun struct {
	l   *env.Lab
	rng *rand.Rand

	// services are the mirrored Services the churn made, by cluster; globals the global
	// services each cluster has.
	services map[string][]string
	globals  map[string][]string
	serial   int

	mu       sync.Mutex // guards what the pod deletions (in goroutines) add
	counts   map[string]int
	problems []string
	kills    sync.WaitGroup
	// rediscover serializes the pod deletions' rediscoverControllers.
	rediscover sync.Mutex
}

func (s *soakRun) count(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[what]++
}

func (s *soakRun) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.l.Logf("soak: %s", msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, msg)
}

// Run runs the churn for d, then the checks of afterChurn, and returns the problems.
func Run(ctx context.Context, l *env.Lab, d time.Duration) []string {
	rec := l.Record()
	if rec.NodesSkipped() || rec.Prometheus == nil {
		return []string{"the soak needs the nodes (root) and Prometheus: nothing runs to soak"}
	}
	s := &soakRun{l: l, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)),
		services: map[string][]string{}, globals: map[string][]string{}, counts: map[string]int{}}
	if err := s.createWorkloads(ctx); err != nil {
		return []string{fmt.Sprintf("soak workloads: %v", err)}
	}
	before, err := footprint(ctx, l)
	if err != nil {
		return []string{fmt.Sprintf("the controllers' footprint before the soak: %v", err)}
	}
	start := time.Now()
	l.Logf("soaking for %s: a change every %s, a remote cut for %s every %s, a controller pod deleted every %s",
		d, soakChurnEvery, soakCutFor, soakCutEvery, soakKillEvery)
	s.churn(ctx, d)
	s.kills.Wait()
	l.Logf("churn over: %s", s.summary())
	if ctx.Err() != nil {
		return []string{"interrupted"}
	}
	// Every check runs, whatever the ones before found: the soak reports all it saw.
	for _, c := range s.afterChurn(start, before) {
		for _, p := range c.Run(ctx, l) {
			s.problem("%s", p)
		}
	}
	return s.problems
}

// summary says what the churn did.
func (s *soakRun) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", s.counts[k], k))
	}
	return strings.Join(parts, ", ")
}
