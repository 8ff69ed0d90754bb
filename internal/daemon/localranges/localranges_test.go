package localranges_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/daemon/localranges"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/metrics"
)

var ipamBlocks = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamblocks"}

// start runs a watcher of c's ranges for guard until the test ends, once it has synced.
func start(t *testing.T, c *testenv.Cluster, guard *addrguard.Guard) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	dyn := dynamic.NewForConfigOrDie(c.Config)
	w, err := localranges.New(c.Client, dyn, guard, localranges.NewMetric(metrics.NewFactory(reg, "test")), time.Minute, slog.New(slog.NewTextHandler(testenv.LogWriter(t), nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go w.Run(ctx)
	testenv.Eventually(t, 30*time.Second, "the watcher synced", func() error {
		if !w.Synced() {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	return reg
}

// refusedAsLocal checks, until it holds, that each address is refused as local when want, and
// not as local otherwise.
func refusedAsLocal(t *testing.T, guard *addrguard.Guard, want bool, addrs ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%v local=%v", addrs, want), func() error {
		for _, a := range addrs {
			var r *addrguard.Refusal
			refused := errors.As(guard.Addr("aws", netip.MustParseAddr(a)), &r)
			if got := refused && r.Reason == addrguard.ReasonLocal; got != want {
				reason := ""
				if refused {
					reason = r.Reason + ": " + r.Detail
				}
				return fmt.Errorf("%s: refused as local %v, want %v (%s)", a, got, want, reason)
			}
		}
		return nil
	})
}

// Every local Node's pod CIDRs and addresses, the Service range and Calico's IPAM blocks are
// local: a remote may publish none of them; a Node that goes takes its ranges with it.
func TestRemoteMayNotPublishTheLocalClustersRanges(t *testing.T) {
	crds := testenv.CRDs("wireguard")
	c := testenv.Start(t, testenv.Options{CRDDirs: []string{crds}, ServiceCIDRs: "10.96.0.0/16"}, "local")[0]
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"big": strings.Repeat("x", 100<<10)}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:244:1::/64"}},
	}
	node, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeHostName, Address: "n1"}}
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	block := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMBlock",
		"metadata": map[string]any{"name": "10-245-0-0-26"},
		"spec":     map[string]any{"cidr": "10.245.0.0/26", "allocations": []any{}, "unallocated": []any{}, "attributes": []any{}, "sequenceNumber": int64(0), "strictAffinity": false},
	}}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	if _, err := dyn.Resource(ipamBlocks).Create(ctx, block, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	guard := addrguard.New(nil)
	reg := start(t, c, guard)
	refusedAsLocal(t, guard, true, "10.244.1.7", "fd00:244:1::7", "192.0.2.10", "10.96.0.10", "10.245.0.3")
	refusedAsLocal(t, guard, false, "10.244.2.7", "192.0.2.11", "10.97.0.1", "10.245.0.64")
	for source, want := range map[string]float64{localranges.SourceNodes: 3, localranges.SourceServiceCIDRs: 1, localranges.SourceCalicoBlocks: 1} {
		if got, _ := testenv.MetricSeries(t, reg, "test_local_ranges", map[string]string{"source": source}); got != want {
			t.Errorf("test_local_ranges{source=%q} = %v, want %v", source, got, want)
		}
	}

	if err := c.Client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refusedAsLocal(t, guard, false, "10.244.1.7", "192.0.2.10")
	refusedAsLocal(t, guard, true, "10.96.0.10", "10.245.0.3")
}

// Without Calico's IPAM blocks the watcher has the other sources and syncs.
func TestWithoutCalicoTheOtherSourcesStillCount(t *testing.T) {
	c := testenv.Start(t, testenv.Options{ServiceCIDRs: "10.96.0.0/16"}, "local")[0]
	guard := addrguard.New(nil)
	reg := start(t, c, guard)
	refusedAsLocal(t, guard, true, "10.96.3.4")
	if _, n := testenv.MetricSeries(t, reg, "test_local_ranges", map[string]string{"source": localranges.SourceCalicoBlocks}); n != 0 {
		t.Errorf("a calico_ipam_blocks series without Calico: %d", n)
	}
}
