package testbed

import (
	"os"
	"path/filepath"
	"testing"
)

// The paths testbed hands to tests and the lab are in the tree wherever the package stands:
// a missing CRD directory would install nothing, and the tests relying on it would fail far
// from the cause.
func TestRepoPathsExist(t *testing.T) {
	for name, path := range map[string]string{
		"the module's go.mod":        filepath.Join(RepoRoot(), "go.mod"),
		"the MCS CRDs":               MCSCRDs(),
		"the ClusterProperty CRD":    ClusterPropertyCRDs(),
		"the ci/ scripts' directory": filepath.Join(RepoRoot(), "ci"),
	} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
