package link_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// With Calico's IPAM, pods take their addresses from the IP pools, whatever the Nodes' pod
// CIDRs say: the proposal holds the enabled pools' CIDRs and the Nodes' pod CIDRs, not a
// disabled pool's.
func TestPodRangesHoldCalicoIPPools(t *testing.T) {
	crds := filepath.Join(testbed.RepoRoot(), "cmd", "kubectl-semaphore", "internal", "link", "testdata", "crds")
	c := testenv.Start(t, testenv.Options{CRDDirs: []string{crds}}, "aws")[0]
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aws-node-1"}, Spec: corev1.NodeSpec{PodCIDR: "198.18.1.0/24", PodCIDRs: []string{"198.18.1.0/24"}}}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pools := dynamic.NewForConfigOrDie(c.Config).Resource(schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ippools"})
	for name, spec := range map[string]map[string]any{
		"default-ipv4": {"cidr": "198.18.0.0/17", "ipipMode": "Never"},
		"default-ipv6": {"cidr": "fd00:18::/48"},
		"retired":      {"cidr": "203.0.113.0/24", "disabled": true},
	} {
		pool := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
		if _, err := pools.Create(ctx, pool, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := link.PodRanges(ctx, c.Client)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"198.18.0.0/17", "fd00:18::/48"}, got); diff != "" {
		t.Errorf("PodRanges (-want +got):\n%s", diff)
	}
}
