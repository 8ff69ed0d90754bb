package env

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/guide"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The pools docs/calico.md tells users to create for the other clusters' pods are the ones the
// lab creates: it reads the page's example pool and makes one like it in every cluster for
// every other cluster, with the other cluster's name and pod range, through the Calico API
// server (projectcalico.org/v3), as the page applies it.

// CalicoDoc is the page that says how to set Calico up for Semaphore.
const CalicoDoc = "docs/calico.md"

// calicoDocPool is the page's example IPPool: the one for aws's IPv4 pods, in gcp.
const calicoDocPool = "semaphore-aws-ipv4"

// DocObject is the object named name of the ```yaml blocks of the markdown file doc (relative
// to the repository's root), as the page writes it.
func DocObject(doc, kind, name string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), doc))
	if err != nil {
		return nil, err
	}
	blocks, err := guide.BlocksOf(data, "yaml")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doc, err)
	}
	for _, b := range blocks {
		objs, err := decodeManifest(bytes.NewReader([]byte(b.Text)), fmt.Sprintf("%s:%d", doc, b.Line))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() == kind && o.GetName() == name {
				return o, nil
			}
		}
	}
	return nil, fmt.Errorf("%s has no %s %s in its yaml blocks", doc, kind, name)
}

// remotePools are the pools cluster gets for the other clusters' pods: the page's example
// pool, named and ranged for each.
func remotePools(cluster string) ([]*unstructured.Unstructured, error) {
	example, err := DocObject(CalicoDoc, "IPPool", calicoDocPool)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range layout.RemotesOf(cluster) {
		p := example.DeepCopy()
		p.SetName("semaphore-" + r + "-ipv4")
		if err := unstructured.SetNestedField(p.Object, layout.SpecOf(r).PodCIDR, "spec", "cidr"); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// createRemotePools creates every cluster's pools for the other clusters' pods.
func (l *Lab) createRemotePools(ctx context.Context) error {
	for _, cluster := range layout.ClusterNames() {
		pools, err := remotePools(cluster)
		if err != nil {
			return err
		}
		if err := applyObjects(ctx, l.clusters[cluster], pools); err != nil {
			return fmt.Errorf("%s: the pools of %s: %w", cluster, CalicoDoc, err)
		}
	}
	l.Logf("created in every cluster the IP pools %s gives for the other clusters' pods (projectcalico.org/v3)", CalicoDoc)
	return nil
}
