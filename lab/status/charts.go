package status

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/kube-semaphore/semaphore/lab/env"
)

// chartsStatus says where the lab's releases and their values are.
type chartsStatus struct{ printOnly }

func (chartsStatus) print(w io.Writer, rec *env.Record) {
	section(w, "Charts (helm install from the lab's registry, as the README tells users)")
	fmt.Fprintf(w, "  helm --kubeconfig %s --kube-context <cluster> list -A\n", rec.Kubeconfig)
	fmt.Fprintf(w, "  %s/%s in every cluster: its values, and its NOTES followed for each consumer, in %s\n", env.RemoteNamespace, env.RemoteRelease,
		filepath.Join(rec.Dir, "clusters", "<cluster>", "semaphore-remote-{values.yaml,NOTES.txt}"))
	fmt.Fprintf(w, "  %s/%s (umbrella) in every cluster: its values and manifest in %s\n", env.SemaphoreNamespace, env.UmbrellaRelease,
		filepath.Join(rec.Dir, "clusters", "<cluster>", "semaphore-{values,manifest}.yaml"))
}
