package globalcontroller

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
	utilruntime.Must(inf.SetTransform(trim.ManagedFields))
	z.synced, z.store = inf.HasSynced, inf.GetStore()
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

// list returns the zones, sorted.
func (z *zones) list() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.last
}

// refresh recomputes the zones and calls changed when they differ from the last ones.
func (z *zones) refresh() {
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
	z.mu.Unlock()
	if !same {
		z.changed()
	}
}

// zoneOf is the zone label of a Node's metadata ("" when it has none).
func zoneOf(obj any) string {
	if m, ok := obj.(interface{ GetLabels() map[string]string }); ok {
		return m.GetLabels()[corev1.LabelTopologyZone]
	}
	return ""
}
