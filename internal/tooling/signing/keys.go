// Package signing signs a release so that users verify it offline with one published public
// key (docs/verifying.md): ECDSA P-256 signatures over SHA-256, in cosign's formats. Files get
// cosign sign-blob's signature (SignBlob), which `cosign verify-blob --key` and `openssl dgst
// -verify` check; images get cosign's signature image in their registry (SignImage), which
// `cosign verify --key` checks. Nothing goes to a transparency log (Rekor) and no certificate
// comes from Fulcio: the key is the trust, and verifying needs nothing but the key.
package signing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// GenerateKey makes a new P-256 key, for tests (a release's key is made once, by a maintainer,
// and kept offline).
func GenerateKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// LoadPrivateKey reads the unencrypted PEM private key at path: PKCS#8 ("PRIVATE KEY", what
// `openssl genpkey` writes) or SEC1 ("EC PRIVATE KEY", `openssl ecparam -genkey`). It must be
// an ECDSA P-256 key.
func LoadPrivateKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// ParsePrivateKey is LoadPrivateKey for the PEM data.
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var parsed any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(block.Bytes)
	case "ENCRYPTED PRIVATE KEY", "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, fmt.Errorf("%s: an encrypted key; give the unencrypted PKCS#8 key (openssl pkcs8 -topk8 -nocrypt)", block.Type)
	default:
		return nil, fmt.Errorf("PEM block %q: want a PKCS#8 \"PRIVATE KEY\" or a SEC1 \"EC PRIVATE KEY\"", block.Type)
	}
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a key of type %T; want ECDSA P-256", parsed)
	}
	if key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("an ECDSA key on %s; want P-256", key.Curve.Params().Name)
	}
	return key, nil
}

// PrivateKeyPEM is key as PEM PKCS#8 ("PRIVATE KEY"), unencrypted: what LoadPrivateKey reads.
func PrivateKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// PublicKeyPEM is pub as PEM PKIX ("PUBLIC KEY"): the public key users verify with, which
// `cosign verify --key`, `cosign verify-blob --key` and `openssl dgst -verify` take.
func PublicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKey reads a PEM PKIX public key, as PublicKeyPEM writes it: an ECDSA P-256 key.
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("no PEM \"PUBLIC KEY\" block")
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := parsed.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("a key of type %T; want ECDSA P-256", parsed)
	}
	return pub, nil
}
