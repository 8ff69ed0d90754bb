package status

import (
	"fmt"
	"io"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// clustersStatus lists the clusters and the registry.
type clustersStatus struct{ printOnly }

func (clustersStatus) print(w io.Writer, rec *layout.Record) {
	section(w, fmt.Sprintf("Clusters (kubectl --kubeconfig %s --context <cluster>)", rec.Kubeconfig))
	tw := table(w)
	for _, c := range rec.Clusters {
		fmt.Fprintf(tw, "  %s\t%s\tservices %s\n", c.Name, c.Server, c.ServiceCIDR)
	}
	tw.Flush()
	if rec.Registry != "" {
		fmt.Fprintf(w, "  registry %s: images %s/..., charts oci://%s/%s/...\n", rec.Registry, layout.ImagesRepo, rec.Registry, layout.ChartsRepo)
	}
}
