package signing_test

import (
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// artifact stands for a release file (an archive, a chart, SHA256SUMS).
var artifact = []byte("kubectl-semaphore_v1.2.3_linux_amd64.tar.gz stands here\n")

// signedArtifact writes artifact, its signature (SignBlob, as <artifact>.sig) and the key
// pair into a new directory.
func signedArtifact(t *testing.T) (dir, file, sig, pub string) {
	t.Helper()
	dir = t.TempDir()
	key, _, pub := keyFiles(t, dir)
	signature, err := signing.SignBlob(key, artifact)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "artifact.tar.gz")
	writeFile(t, file, artifact)
	writeFile(t, file+".sig", signature)
	return dir, file, file + ".sig", pub
}

func TestOpenSSLVerifiesSignBlob(t *testing.T) {
	dir, file, sig, pub := signedArtifact(t)
	// As docs/verifying.md has users do it: the .sig is base64 of the DER signature.
	raw, err := exec.Command("base64", "-d", sig).Output()
	if err != nil {
		t.Fatalf("base64 -d: %v", err)
	}
	der := filepath.Join(dir, "artifact.sig.der")
	writeFile(t, der, raw)
	if out := openssl(t, "dgst", "-sha256", "-verify", pub, "-signature", der, file); string(out) != "Verified OK\n" {
		t.Errorf("openssl dgst -verify: %q", out)
	}
	tampered := filepath.Join(dir, "tampered")
	writeFile(t, tampered, append([]byte("x"), artifact...))
	out, err := exec.Command(tool(t, opensslBinary), "dgst", "-sha256", "-verify", pub, "-signature", der, tampered).CombinedOutput()
	if err == nil {
		t.Errorf("openssl verified the signature over other data: %s", out)
	}
}

func TestCosignVerifiesSignBlobOffline(t *testing.T) {
	dir, file, sig, pub := signedArtifact(t)
	if ok, _ := cosign(t, "verify-blob", "--key", pub, "--signature", sig, "--insecure-ignore-tlog=true", file); !ok {
		t.Error("cosign verify-blob refused SignBlob's signature")
	}
	tampered := filepath.Join(dir, "tampered")
	writeFile(t, tampered, append([]byte("x"), artifact...))
	if ok, _ := cosign(t, "verify-blob", "--key", pub, "--signature", sig, "--insecure-ignore-tlog=true", tampered); ok {
		t.Error("cosign verify-blob accepted the signature over other data")
	}
	_, _, otherPub := keyFiles(t, t.TempDir())
	if ok, _ := cosign(t, "verify-blob", "--key", otherPub, "--signature", sig, "--insecure-ignore-tlog=true", file); ok {
		t.Error("cosign verify-blob accepted the signature with another key")
	}
}

// TestVerifyBlobChecksSignaturesOfOthers checks VerifyBlob, the release's self-check, against
// SignBlob and against a signature openssl makes with the same key.
func TestVerifyBlobChecksSignaturesOfOthers(t *testing.T) {
	dir := t.TempDir()
	key, private, _ := keyFiles(t, dir)
	file := filepath.Join(dir, "artifact")
	writeFile(t, file, artifact)
	der := openssl(t, "dgst", "-sha256", "-sign", private, file)
	fromOpenSSL := []byte(base64.StdEncoding.EncodeToString(der) + "\n")
	ours, err := signing.SignBlob(key, artifact)
	if err != nil {
		t.Fatal(err)
	}
	for name, sig := range map[string][]byte{"openssl's": fromOpenSSL, "SignBlob's": ours} {
		if err := signing.VerifyBlob(&key.PublicKey, artifact, sig); err != nil {
			t.Errorf("%s signature: %v", name, err)
		}
		if err := signing.VerifyBlob(&key.PublicKey, append([]byte("x"), artifact...), sig); err == nil {
			t.Errorf("%s signature verified over other data", name)
		}
	}
	other, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := signing.VerifyBlob(&other.PublicKey, artifact, ours); err == nil {
		t.Error("the signature verified with another key")
	}
}
