package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteKubeconfig writes the kubeconfig text (YAML) into a file of the test's and returns its
// path. It is exported to the package's external tests.
func WriteKubeconfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
