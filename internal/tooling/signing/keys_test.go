package signing_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// TestLoadPrivateKeyReadsWhatOpenSSLWrites loads P-256 keys as openssl writes them, PKCS#8 and
// SEC1, and checks that PublicKeyPEM gives the public key openssl derives from them.
func TestLoadPrivateKeyReadsWhatOpenSSLWrites(t *testing.T) {
	dir := t.TempDir()
	pkcs8, sec1 := filepath.Join(dir, "pkcs8.pem"), filepath.Join(dir, "sec1.pem")
	openssl(t, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", pkcs8)
	openssl(t, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", sec1)
	for _, path := range []string{pkcs8, sec1} {
		key, err := signing.LoadPrivateKey(path)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		pub, err := signing.PublicKeyPEM(&key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if want := openssl(t, "pkey", "-in", path, "-pubout"); !bytes.Equal(pub, want) {
			t.Errorf("%s: PublicKeyPEM gives\n%s\nopenssl pkey -pubout\n%s", filepath.Base(path), pub, want)
		}
		if _, err := signing.ParsePublicKey(pub); err != nil {
			t.Errorf("ParsePublicKey(PublicKeyPEM): %v", err)
		}
	}
}

func TestLoadPrivateKeyRefusesOtherKeys(t *testing.T) {
	dir := t.TempDir()
	keys := map[string][]string{
		"p384.pem":      {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"},
		"ed25519.pem":   {"genpkey", "-algorithm", "ed25519"},
		"rsa.pem":       {"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"},
		"encrypted.pem": {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:secret"},
	}
	for file, args := range keys {
		path := filepath.Join(dir, file)
		openssl(t, append(args, "-out", path)...)
		if _, err := signing.LoadPrivateKey(path); err == nil {
			t.Errorf("%s: loaded; want an error", file)
		} else {
			t.Logf("%s: %v", file, err)
		}
	}
	pub := filepath.Join(dir, "p384.pub")
	openssl(t, "pkey", "-in", filepath.Join(dir, "p384.pem"), "-pubout", "-out", pub)
	data, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.ParsePublicKey(data); err == nil {
		t.Error("ParsePublicKey read a P-384 key; want an error")
	}
}
