package signing

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// SignBlob signs data as `cosign sign-blob --key` does: the ASN.1 DER ECDSA signature over
// SHA-256(data), base64-encoded (standard alphabet, no newline). The caller writes it next to
// the artifact as <artifact>.sig. `base64 -d` gives the DER signature that `openssl dgst
// -sha256 -verify` takes.
func SignBlob(key *ecdsa.PrivateKey, data []byte) ([]byte, error) {
	der, err := sign(key, data)
	if err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(der)), nil
}

// VerifyBlob checks sig, a signature as SignBlob writes it (surrounding white space allowed),
// against data and pub.
func VerifyBlob(pub *ecdsa.PublicKey, data, sig []byte) error {
	der, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sig)))
	if err != nil {
		return fmt.Errorf("the signature is not base64: %w", err)
	}
	digest := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pub, digest[:], der) {
		return errors.New("the signature does not match the data and the key")
	}
	return nil
}

// sign is the ASN.1 DER ECDSA signature of SHA-256(data).
func sign(key *ecdsa.PrivateKey, data []byte) ([]byte, error) {
	digest := sha256.Sum256(data)
	return ecdsa.SignASN1(rand.Reader, key, digest[:])
}
