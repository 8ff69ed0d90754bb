package mcscontroller

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
)

// clusterProperties are the about.k8s.io ClusterProperties (KEP-2149). Their CRD is not ours:
// a cluster that has it may say its ID; one without it is known by its name.
var clusterProperties = schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}

// clusterIDReader reads the ID a cluster claims, from its ClusterProperty cluster.clusterset.k8s.io,
// at the start and every interval after: a cluster's ID is meant to stay the same for as long as
// it is in the clusterset, and a get of one object by name is all its RBAC has to grant. It is a
// multiremote.Factory, synced once the claim is known (the cluster has one, has none, or does
// not let us read it), so that no copy of the cluster's endpoints is written with an ID not yet
// read. A cluster that cannot be reached keeps the claim last read.
type clusterIDReader struct {
	cluster  string
	client   dynamic.Interface
	interval time.Duration
	log      *slog.Logger
	// changed is called with the claim whenever it is read for the first time or differs.
	changed func(cluster, claim string)

	synced atomic.Bool
	claim  string
}

func newClusterIDReader(cluster string, cfg *rest.Config, interval time.Duration, log *slog.Logger, changed func(cluster, claim string)) (*clusterIDReader, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clusterIDReader{cluster: cluster, client: client, interval: interval, log: log.With("cluster", cluster), changed: changed}, nil
}

// Start reads the claim until stop closes: quickly again while it is not known, every interval
// once it is.
func (r *clusterIDReader) Start(stop <-chan struct{}) {
	ctx := wait.ContextForChannel(stop)
	go func() {
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: r.interval}
		for {
			next := r.interval
			if !r.read(ctx) && !r.synced.Load() {
				next = backoff.Step()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(next):
			}
		}
	}()
}

// Shutdown is nothing to do: the reader stops with the stop channel Start was given.
func (r *clusterIDReader) Shutdown() {}

// HasSynced reports whether the claim has been read once.
func (r *clusterIDReader) HasSynced() bool { return r.synced.Load() }

// read gets the ClusterProperty; false when the cluster could not tell.
func (r *clusterIDReader) read(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	claim := ""
	obj, err := r.client.Resource(clusterProperties).Get(ctx, mcs.ClusterIDProperty, metav1.GetOptions{})
	switch {
	case err == nil:
		claim, _, _ = unstructured.NestedString(obj.Object, "spec", "value")
	case apierrors.IsNotFound(err):
		// No ClusterProperty, or no CRD for it: known by its name.
	case apierrors.IsForbidden(err):
		if !r.synced.Load() {
			r.log.Info("cannot read the cluster's ID from its ClusterProperty; its endpoints carry its name as their source cluster (grant get on clusterproperties.about.k8s.io to use its ID)",
				"clusterproperty", mcs.ClusterIDProperty, "err", err)
		}
	default:
		if !r.synced.Load() {
			r.log.Warn("cannot read the cluster's ID yet", "err", err)
		}
		return false
	}
	if !r.synced.Load() || claim != r.claim {
		r.claim = claim
		r.changed(r.cluster, claim)
	}
	r.synced.Store(true)
	return true
}

// clusterIDs are the IDs of every cluster, resolved from their claims by mcs.ClusterIDs.
type clusterIDs struct {
	mu       sync.Mutex
	claimed  map[string]string
	refusals map[string]string
	ids      atomic.Pointer[map[string]string]
}

// newClusterIDs knows every cluster by its name until its claim is read: a claim of a cluster's
// name is refused before that cluster's own claim is read too.
func newClusterIDs(clusters []string) *clusterIDs {
	c := &clusterIDs{claimed: map[string]string{}}
	ids := map[string]string{}
	for _, name := range clusters {
		c.claimed[name], ids[name] = "", name
	}
	c.ids.Store(&ids)
	return c
}

// of is the ID of cluster: its name until its claim is taken.
func (c *clusterIDs) of(cluster string) string {
	if id, ok := (*c.ids.Load())[cluster]; ok {
		return id
	}
	return cluster
}

// set records the claim of cluster and resolves every cluster's ID again; it returns the
// refusals that are new, and whether any ID changed.
func (c *clusterIDs) set(cluster, claim string) (newRefusals map[string]string, changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claimed[cluster] = claim
	ids, refused := mcs.ClusterIDs(c.claimed)
	newRefusals = map[string]string{}
	for name, reason := range refused {
		if c.refusals[name] != reason {
			newRefusals[name] = reason
		}
	}
	c.refusals = refused
	changed = !maps.Equal(ids, *c.ids.Load())
	c.ids.Store(&ids)
	return newRefusals, changed
}

// refused reports whether the claim of cluster is refused.
func (c *clusterIDs) refused(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.refusals[cluster]
	return ok
}
