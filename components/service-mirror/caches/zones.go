package caches

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-semaphore/semaphore/internal/trim"
)

// Zones are the zones of the local cluster's Nodes (topology.kubernetes.io/zone), read from
// the Nodes' metadata only: a Node's status is large and of no interest here. The local-first
// routing of global services and of imports reads them: one watch for both.
type Zones struct {
	// Factory is to be started, and Synced waited for, by each controller that reads them.
	Factory metadatainformer.SharedInformerFactory
	Synced  cache.InformerSynced
	store   cache.Store

	mu        sync.Mutex
	last      []string
	listeners []func()
}

// NewZones watches the Nodes' metadata, re-listed every resync (0 disables).
func NewZones(meta metadata.Interface, resync time.Duration) *Zones {
	z := &Zones{Factory: metadatainformer.NewSharedInformerFactory(meta, resync)}
	inf := z.Factory.ForResource(corev1.SchemeGroupVersion.WithResource("nodes")).Informer()
	utilruntime.Must(inf.SetTransform(trim.ManagedFields))
	z.Synced, z.store = inf.HasSynced, inf.GetStore()
	// A Node's metadata changes with every status update; only a zone that changes matters.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { z.refresh() },
		DeleteFunc: func(any) { z.refresh() },
		UpdateFunc: func(old, obj any) {
			if zoneOf(old) != zoneOf(obj) {
				z.refresh()
			}
		},
	})
	return z
}

// OnChange has f called whenever the zones change. Call it before the factory starts.
func (z *Zones) OnChange(f func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.listeners = append(z.listeners, f)
}

// List returns the zones, sorted.
func (z *Zones) List() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.last
}

// refresh recomputes the zones and calls the listeners when they differ from the last ones.
func (z *Zones) refresh() {
	set := map[string]bool{}
	for _, o := range z.store.List() {
		if zone := zoneOf(o); zone != "" {
			set[zone] = true
		}
	}
	now := make([]string, 0, len(set))
	for zone := range set {
		now = append(now, zone)
	}
	slices.Sort(now)
	z.mu.Lock()
	same := slices.Equal(now, z.last)
	z.last = now
	listeners := z.listeners
	z.mu.Unlock()
	if !same {
		for _, f := range listeners {
			f()
		}
	}
}

// zoneOf is the zone label of a Node's metadata ("" when it has none).
func zoneOf(obj any) string {
	if m, ok := obj.(interface{ GetLabels() map[string]string }); ok {
		return m.GetLabels()[corev1.LabelTopologyZone]
	}
	return ""
}
