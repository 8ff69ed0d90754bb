package status

import (
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// calicoBlocks reads the IPAM blocks calico-ipam keeps in the Calico-way cluster
// (layout.CalicoCluster) once for the parts of a status collection that share it; a nil one reads
// them for each caller.
type calicoBlocks struct {
	once sync.Once
	ipam calicoIPAM
}

// read is the cluster's IPAM as the first caller read it, its error in err.
func (c *calicoBlocks) read(ctx context.Context, rec *layout.Record) calicoIPAM {
	if c == nil {
		return readCalicoIPAM(ctx, rec)
	}
	c.once.Do(func() { c.ipam = readCalicoIPAM(ctx, rec) })
	return c.ipam
}

// readCalicoIPAM lists the Calico-way cluster's IPAM blocks from its API server.
func readCalicoIPAM(ctx context.Context, rec *layout.Record) calicoIPAM {
	blocks, err := listBlocks(ctx, rec)
	if err != nil {
		return calicoIPAM{err: fmt.Errorf("reading %s's IPAM blocks (%s): %w", layout.CalicoCluster, calicoipam.Resource.GroupResource(), err)}
	}
	return newCalicoIPAM(blocks)
}

func listBlocks(ctx context.Context, rec *layout.Record) ([]*calicoipam.Block, error) {
	i := slices.IndexFunc(rec.Clusters, func(c layout.ClusterRecord) bool { return c.Name == layout.CalicoCluster })
	if i < 0 {
		return nil, fmt.Errorf("the lab has not recorded cluster %s", layout.CalicoCluster)
	}
	cfg, err := clientConfig(rec.Clusters[i].DirectKubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(calicoipam.Resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*calicoipam.Block, len(list.Items))
	for j := range list.Items {
		out[j] = calicoipam.FromUnstructured(&list.Items[j])
	}
	return out, nil
}
