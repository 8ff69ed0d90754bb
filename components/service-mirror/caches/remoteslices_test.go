package caches_test

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-semaphore/semaphore/components/service-mirror/caches"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// Every caller gets the same informer of a remote, indexed by Service; each remote its own.
func TestOneInformerPerRemote(t *testing.T) {
	shared := caches.NewRemoteSlices(0)
	aws := remote.Cluster{Name: "aws", Client: fake.NewClientset()}
	gcp := remote.Cluster{Name: "gcp", Client: fake.NewClientset()}
	f1, i1 := shared.For(aws)
	f2, i2 := shared.For(aws)
	_, i3 := shared.For(gcp)
	if f1 != f2 || i1 != i2 {
		t.Error("two callers got two informers of aws")
	}
	if i1 == i3 {
		t.Error("aws and gcp share an informer")
	}
	if _, ok := i1.GetIndexer().GetIndexers()[mirror.ByServiceName]; !ok {
		t.Error("the informer has no index by Service")
	}
}
