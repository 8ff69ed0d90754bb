package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// A remote pod's address inside a local Node's pod CIDR stays out of its set while that Node
// exists; once the Node goes, the address goes in, though nothing changed in the remote: a
// change of the local ranges makes the controller look at every remote object again, not only
// at the next resync (10 minutes here).
func TestALocalRangeThatGoesReadmitsWhatItRefused(t *testing.T) {
	api := calico.APIv3
	cfg := newConfig(t, api, "aws", "gcp")
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "local-claimer"},
		Spec:       corev1.NodeSpec{PodCIDR: "198.18.70.0/24", PodCIDRs: []string{"198.18.70.0/24"}},
	}
	if _, err := local.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	ns := fixture.Namespace(t, "sys-log")
	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	pod(t, gcp, ns, "forwarder-0", src.Name, "198.18.70.5")
	pod(t, gcp, ns, "forwarder-1", src.Name, "198.18.71.5")
	r := start(t, cfg)

	testenv.Eventually(t, 30*time.Second, "the set without the local Node's address", func() error {
		return setHas(api, src, "198.18.71.5/32")
	})
	if v, _ := testenv.MetricSeries(t, r.App.Registry, "semaphore_policy_refused_addresses_total",
		map[string]string{"remote": "gcp", "reason": addrguard.ReasonLocal}); v != 1 {
		t.Errorf("refused_addresses_total{gcp,local_address} = %v, want 1", v)
	}

	if err := local.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the address in the set once the local Node went", func() error {
		if err := setHas(api, src, "198.18.70.5/32", "198.18.71.5/32"); err != nil {
			return fmt.Errorf("%w (the remote did not change)", err)
		}
		return nil
	})
}
