package signing

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The parts of cosign's signature image (cosign v2: pkg/oci/static, pkg/types).
const (
	// SimpleSigningMediaType is the media type of a signature layer: the payload that is signed.
	SimpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds, on a signature layer, the base64 signature of its payload.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// signatureType is the payload's critical.type.
	signatureType = "cosign container image signature"
)

// SignaturePayload is what SignImage signs for the image ref: the "simple signing" JSON that
// `cosign sign` writes, naming the image's repository and manifest digest, without optional
// annotations.
func SignaturePayload(ref name.Digest) ([]byte, error) {
	type identity struct {
		DockerReference string `json:"docker-reference"`
	}
	type image struct {
		DockerManifestDigest string `json:"docker-manifest-digest"`
	}
	type critical struct {
		Identity identity `json:"identity"`
		Image    image    `json:"image"`
		Type     string   `json:"type"`
	}
	return json.Marshal(struct {
		Critical critical       `json:"critical"`
		Optional map[string]any `json:"optional"`
	}{Critical: critical{
		Identity: identity{DockerReference: ref.Context().Name()},
		Image:    image{DockerManifestDigest: ref.DigestStr()},
		Type:     signatureType,
	}})
}

// SignatureTag is where cosign keeps the signatures of the image ref: <repo>:sha256-<hex>.sig.
func SignatureTag(ref name.Digest) name.Tag {
	return ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
}

// SignImage signs the image (or image index) ref with key as `cosign sign --key
// --tlog-upload=false` does, and pushes the signature to ref's registry at SignatureTag(ref):
// a one-layer OCI image whose layer is SignaturePayload(ref), annotated with the signature.
// Signatures already there are kept, and one of key over the same payload makes this a no-op,
// as with cosign. opts go to go-containerregistry's remote calls (credentials, transport).
func SignImage(ctx context.Context, key *ecdsa.PrivateKey, ref name.Digest, opts ...remote.Option) (name.Tag, error) {
	tag := SignatureTag(ref)
	opts = append(opts, remote.WithContext(ctx))
	payload, err := SignaturePayload(ref)
	if err != nil {
		return tag, err
	}
	base, signed, err := existingSignatures(tag, &key.PublicKey, payload, opts)
	if err != nil || signed {
		return tag, err
	}
	der, err := sign(key, payload)
	if err != nil {
		return tag, err
	}
	img, err := withSignature(base, payload, base64.StdEncoding.EncodeToString(der))
	if err != nil {
		return tag, err
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return tag, fmt.Errorf("pushing the signature of %s: %w", ref, err)
	}
	return tag, nil
}

// existingSignatures is the signature image at tag to add to, empty when there is none, and
// whether it already holds a signature of payload by pub (cosign's duplicate detection).
func existingSignatures(tag name.Tag, pub *ecdsa.PublicKey, payload []byte, opts []remote.Option) (v1.Image, bool, error) {
	img, err := remote.Image(tag, opts...)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return noSignatures(), false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the signatures at %s: %w", tag, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, false, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(payload))
	if err != nil {
		return nil, false, err
	}
	for _, l := range manifest.Layers {
		if l.Digest != digest || l.MediaType != SimpleSigningMediaType {
			continue
		}
		if VerifyBlob(pub, payload, []byte(l.Annotations[SignatureAnnotation])) == nil {
			return img, true, nil
		}
	}
	return img, false, nil
}

// noSignatures is cosign's signature image before the first signature: empty, with OCI's
// manifest and configuration media types.
func noSignatures() v1.Image {
	return mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
}

// withSignature is the signature image base with one more layer, as cosign adds it: payload,
// uncompressed, annotated with its base64 signature b64sig.
func withSignature(base v1.Image, payload []byte, b64sig string) (v1.Image, error) {
	return mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(payload, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: b64sig},
	})
}
