package versions

import "testing"

// An image's tag comes from its reference, wherever the registry's port and the digest are; its
// digest from what the runtime pulled (the imageID after "@"), else from the reference; a
// runtime's own image ID is no digest.
func TestImageTagAndDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref, imageID, tag, digest string
	}{
		{"ghcr.io/kube-semaphore/semaphore-policy:v1.2.3", "", "v1.2.3", ""},
		{"ghcr.io/kube-semaphore/semaphore-policy:v1.2.3", "ghcr.io/kube-semaphore/semaphore-policy@" + digest, "v1.2.3", digest},
		{"registry.local:5000/semaphore-policy:v1", "docker-pullable://registry.local:5000/semaphore-policy@" + digest, "v1", digest},
		{"registry.local:5000/semaphore-policy", "", "", ""},
		{"semaphore-policy", "sha256:fedcba", "", ""},
		{"ghcr.io/kube-semaphore/semaphore-policy:v1.2.3@" + digest, "", "v1.2.3", digest},
		{"ghcr.io/kube-semaphore/semaphore-policy@" + digest, "", "", digest},
	} {
		img := imageOf(tc.ref, tc.imageID)
		if img.Image != tc.ref || img.Tag != tc.tag || img.Digest != tc.digest {
			t.Errorf("imageOf(%q, %q) = %+v, want tag %q, digest %q", tc.ref, tc.imageID, img, tc.tag, tc.digest)
		}
	}
	if got := shortDigest(digest); got != "sha256:0123456789ab" {
		t.Errorf("shortDigest: %q", got)
	}
}
