package release

import (
	"testing"

	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The image an SBOM of dist.ImageSBOMs is of comes from its name.
func TestImageOfSBOM(t *testing.T) {
	if got := imageOfSBOM("semaphore-service-mirror_v0.0.0-lab.gabc_linux_amd64.cdx.json", "v0.0.0-lab.gabc"); got != ownership.ServiceMirror {
		t.Errorf("imageOfSBOM = %q, want %q", got, ownership.ServiceMirror)
	}
}
