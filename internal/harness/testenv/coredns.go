package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// StartCoreDNS runs CoreDNS with corefile until the test ends and returns the address
// (127.0.0.1:port, UDP and TCP) it serves DNS on (see testbed.StartCoreDNS). The output of
// CoreDNS is logged when the test fails. It skips the test under -short.
func StartCoreDNS(t testing.TB, corefile string) (addr string) {
	t.Helper()
	SkipIfShort(t, "CoreDNS")
	dir := t.TempDir()
	addr, stop, err := testbed.StartCoreDNS(dir, corefile)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after t.TempDir, so it runs before the directory (and the log) is removed.
	t.Cleanup(func() {
		stop()
		if out, err := os.ReadFile(filepath.Join(dir, testbed.CoreDNSLog)); err == nil && t.Failed() {
			t.Logf("coredns output:\n%s", out)
		}
	})
	return addr
}

// CorefileFromDocs is testbed.CorefileFromDocs that fails the test when docs/coredns.md's
// Corefile no longer has the shape a test needs.
func CorefileFromDocs(t testing.TB, kubeconfig, mirrorNamespace string) string {
	t.Helper()
	corefile, err := testbed.CorefileFromDocs(kubeconfig, mirrorNamespace)
	if err != nil {
		t.Fatalf("docs/coredns.md: %v", err)
	}
	return corefile
}
