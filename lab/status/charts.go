package status

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// chartsStatus says where the lab's releases and their values are.
type chartsStatus struct{ printOnly }

func (chartsStatus) print(w io.Writer, rec *layout.Record) {
	section(w, fmt.Sprintf("Charts (helm install from the lab's registry, by %s's commands, run as they are)", layout.GuideFile))
	fmt.Fprintf(w, "  helm --kubeconfig %s --kube-context <cluster> list -A\n", rec.Kubeconfig)
	fmt.Fprintf(w, "  the guide's commands and their output: %s\n", filepath.Join(rec.Dir, "logs", "guide-install.log"))
	fmt.Fprintf(w, "  %s/%s in every cluster: its NOTES in %s\n", layout.RemoteNamespace, layout.RemoteRelease,
		filepath.Join(rec.Dir, "clusters", "<cluster>", "semaphore-remote-NOTES.txt"))
	fmt.Fprintf(w, "  %s/%s (umbrella) in every cluster: the values link wrote and the lab's own in %s, its manifest in %s\n", layout.SemaphoreNamespace, layout.UmbrellaRelease,
		filepath.Join(rec.Dir, "guide", "{semaphore-values/<cluster>,my-values-<cluster>}.yaml"), filepath.Join(rec.Dir, "clusters", "<cluster>", "semaphore-manifest.yaml"))
}
