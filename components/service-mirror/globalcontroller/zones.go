package globalcontroller

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// zones are the zones of the local cluster's Nodes (topology.kubernetes.io/zone), read from
// the Nodes' metadata only: a Node's status is large and of no interest here.
type zones struct {
	factory metadatainformer.SharedInformerFactory
	synced  cache.InformerSynced
	store   cache.Store
	changed func()

	mu   sync.Mutex
	last []string
}

func newZones(meta metadata.Interface, resync time.Duration, changed func()) *zones {
	z := &zones{factory: metadatainformer.NewSharedInformerFactory(meta, resync), changed: changed}
	inf := z.factory.ForResource(corev1.SchemeGroupVersion.WithResource("nodes")).Informer()
	z.synced, z.store = inf.HasSynced, inf.GetStore()
	_, _ = inf.AddEventHandler(handler(func(any) { z.refresh() }))
	return z
}

// List returns the zones, sorted.
func (z *zones) List() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.last
}

// refresh recomputes the zones and calls changed when they differ from the last ones.
func (z *zones) refresh() {
	set := map[string]bool{}
	for _, o := range z.store.List() {
		if m, ok := o.(interface{ GetLabels() map[string]string }); ok {
			if zone := m.GetLabels()[corev1.LabelTopologyZone]; zone != "" {
				set[zone] = true
			}
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
	z.mu.Unlock()
	if !same {
		z.changed()
	}
}
