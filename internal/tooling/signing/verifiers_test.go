package signing_test

import (
	"crypto/ecdsa"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// The independent verifiers, from ci/cosign.sh: cosign built from the module proxy (cached;
// a cold build takes minutes) and Debian's openssl, each looked up once per process.
var (
	cosignBinary  = sync.OnceValues(func() (string, error) { return testbed.CIToolPath(os.Stderr, "cosign.sh") })
	opensslBinary = sync.OnceValues(func() (string, error) { return testbed.CIToolPath(os.Stderr, "cosign.sh", "openssl") })
)

// tool returns the path one of the functions above found, failing the test if it could not.
func tool(t *testing.T, find func() (string, error)) string {
	t.Helper()
	p, err := find()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cosign runs cosign with args and returns whether it succeeded, and its output. It keeps
// cosign offline: its home, cache and TUF root are empty directories, and every connection it
// would open to anything but this machine (Rekor, Fulcio, the TUF mirror) goes to a proxy that
// refuses it, so a verification that needed the network fails rather than quietly using it.
func cosign(t *testing.T, args ...string) (bool, string) {
	t.Helper()
	testenv.SkipIfShort(t, "cosign, built by ci/cosign.sh")
	bin := tool(t, cosignBinary)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"),
		"SIGSTORE_NO_CACHE=true", "DOCKER_CONFIG="+filepath.Join(home, "docker"),
		"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	t.Logf("cosign %s:\n%s", strings.Join(args, " "), out)
	return err == nil, string(out)
}

// openssl runs openssl with args and returns its output, failing the test if it fails.
func openssl(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(tool(t, opensslBinary), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// keyFiles makes a key, and writes its private key (PKCS#8) and public key (PKIX) as PEM files
// in dir.
func keyFiles(t *testing.T, dir string) (key *ecdsa.PrivateKey, private, public string) {
	t.Helper()
	key, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := signing.PrivateKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub")
	writeFile(t, private, priv)
	writeFile(t, public, pub)
	return key, private, public
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
