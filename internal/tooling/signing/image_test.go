package signing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kube-semaphore/semaphore/internal/tooling/signing"
)

// pushedIndex serves a registry on 127.0.0.1 until the test ends (plain HTTP, which
// go-containerregistry and cosign use for loopback addresses) and pushes an image index of two
// random images to it, as a release pushes each component's index of two platforms.
func pushedIndex(t *testing.T) name.Digest {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(strings.TrimPrefix(srv.URL, "http://") + "/kube-semaphore/semaphore-test:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

func signImage(t *testing.T, ref name.Digest) (pub string) {
	t.Helper()
	key, _, pub := keyFiles(t, t.TempDir())
	if _, err := signing.SignImage(context.Background(), key, ref); err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestCosignVerifiesSignImageOffline(t *testing.T) {
	ref := pushedIndex(t)
	pub := signImage(t, ref)
	verify := func(pub string, ref name.Reference) (bool, string) {
		return cosign(t, "verify", "--key", pub, "--insecure-ignore-tlog=true", "--allow-insecure-registry", ref.String())
	}
	ok, out := verify(pub, ref)
	if !ok {
		t.Fatal("cosign verify refused SignImage's signature")
	}
	// cosign prints the payloads it verified, one JSON array, after its warnings.
	var payloads []struct {
		Critical struct {
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n[{")+1:]), &payloads); err != nil ||
		len(payloads) != 1 || payloads[0].Critical.Image.DockerManifestDigest != ref.DigestStr() {
		t.Errorf("cosign verified %+v (%v), want one payload for %s", payloads, err, ref.DigestStr())
	}
	_, _, otherPub := keyFiles(t, t.TempDir())
	if ok, _ := verify(otherPub, ref); ok {
		t.Error("cosign verify accepted the signature with another key")
	}
	unsigned := pushedIndex(t)
	if ok, _ := verify(pub, unsigned); ok {
		t.Error("cosign verify accepted an image nobody signed")
	}
}

// TestSignImagePushesCosignsSignatureImage checks the pushed signature image against cosign's
// format: the tag, the media types, the payload and the annotation; and that signing again with
// the same key adds nothing, while another key's signature is added next to the first.
func TestSignImagePushesCosignsSignatureImage(t *testing.T) {
	ref := pushedIndex(t)
	key, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tag, err := signing.SignImage(ctx, key, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := ref.Context().Name() + ":sha256-" + strings.TrimPrefix(ref.DigestStr(), "sha256:") + ".sig"; tag.Name() != want {
		t.Errorf("signature tag %s, want %s", tag.Name(), want)
	}
	payload := `{"critical":{"identity":{"docker-reference":"` + ref.Context().Name() + `"},"image":{"docker-manifest-digest":"` +
		ref.DigestStr() + `"},"type":"cosign container image signature"},"optional":null}`
	layers := signatureLayers(t, tag, payload)
	if len(layers) != 1 {
		t.Fatalf("%d signatures, want 1", len(layers))
	}
	if err := signing.VerifyBlob(&key.PublicKey, []byte(payload), []byte(layers[0])); err != nil {
		t.Errorf("the layer's signature annotation: %v", err)
	}
	if _, err := signing.SignImage(ctx, key, ref); err != nil {
		t.Fatal(err)
	}
	if n := len(signatureLayers(t, tag, payload)); n != 1 {
		t.Errorf("after signing again with the same key: %d signatures, want 1", n)
	}
	other, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.SignImage(ctx, other, ref); err != nil {
		t.Fatal(err)
	}
	if n := len(signatureLayers(t, tag, payload)); n != 2 {
		t.Errorf("after signing with another key: %d signatures, want 2", n)
	}
}

// signatureLayers checks that the image at tag is a cosign signature image whose every layer is
// payload, and returns each layer's signature annotation.
func signatureLayers(t *testing.T, tag name.Tag, payload string) []string {
	t.Helper()
	img, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("media types: manifest %s, config %s; want OCI's, as cosign's", m.MediaType, m.Config.MediaType)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var sigs []string
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d := m.Layers[i]; string(data) != payload || d.MediaType != signing.SimpleSigningMediaType {
			t.Errorf("layer %d: %s %s, want %s %s", i, d.MediaType, data, signing.SimpleSigningMediaType, payload)
		}
		sigs = append(sigs, m.Layers[i].Annotations[signing.SignatureAnnotation])
	}
	return sigs
}

// TestSignImageWritesWhatCosignSignWrites has cosign itself sign an image with our key (`cosign
// sign --key --tlog-upload=false`): given cosign's signature, the signature image SignImage
// builds has exactly the manifest and configuration cosign pushed; and SignImage sees cosign's
// signature as its own and adds none.
func TestSignImageWritesWhatCosignSignWrites(t *testing.T) {
	ref := pushedIndex(t)
	dir := t.TempDir()
	key, private, _ := keyFiles(t, dir)
	t.Setenv("COSIGN_PASSWORD", "") // cosign keeps keys encrypted, here with an empty password
	if ok, _ := cosign(t, "import-key-pair", "--key", private, "--output-key-prefix", filepath.Join(dir, "cosign")); !ok {
		t.Fatal("cosign import-key-pair failed")
	}
	if ok, _ := cosign(t, "sign", "--key", filepath.Join(dir, "cosign.key"), "--tlog-upload=false", "--allow-insecure-registry", "--yes", ref.String()); !ok {
		t.Fatal("cosign sign failed")
	}
	tag := signing.SignatureTag(ref)
	theirs, err := remote.Image(tag)
	if err != nil {
		t.Fatalf("cosign pushed no signature to %s: %v", tag, err)
	}
	m, err := theirs.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	payload, err := signing.SignaturePayload(ref)
	if err != nil {
		t.Fatal(err)
	}
	signatureLayers(t, tag, string(payload))
	ours, err := signing.WithSignature(signing.NoSignatures(), payload, m.Layers[0].Annotations[signing.SignatureAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct {
		name         string
		theirs, ours func() ([]byte, error)
	}{
		{"manifest", theirs.RawManifest, ours.RawManifest},
		{"configuration", theirs.RawConfigFile, ours.RawConfigFile},
	} {
		want, err1 := part.theirs()
		got, err2 := part.ours()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the signature image's %s:\n%s\ncosign's:\n%s", part.name, got, want)
		}
	}
	before, err := theirs.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.SignImage(context.Background(), key, ref); err != nil {
		t.Fatal(err)
	}
	if after, err := remote.Head(tag); err != nil || after.Digest != before {
		t.Errorf("SignImage with the key cosign signed with changed the signatures (%v, %v): want no second signature", after, err)
	}
}
