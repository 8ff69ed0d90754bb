package env

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
	"github.com/kube-semaphore/semaphore/internal/tooling/sbom"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// digestOf is a made-up digest for image, the same every time.
func digestOf(image string) string {
	return "sha256:" + strings.Repeat(string(rune('a'+len(image)%6)), 64)
}

func labDigests() map[string]string {
	out := map[string]string{}
	for image := range componentValues {
		out[image] = digestOf(image)
	}
	return out
}

// The digests the lab pins reach every component's pods: each runs its image by the lab's tag
// and the digest.
func TestPinnedDigestsNameEveryComponentsImageByTagAndDigest(t *testing.T) {
	l := &Lab{registry: "127.0.0.1:5000", imageTag: "0.0.0-lab.gabc"}
	values := l.labValues(layout.HostileConsumer)
	values["global"].(map[string]any)["clusterName"] = layout.HostileConsumer
	pinDigests(values, labDigests())
	rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), layout.UmbrellaRelease, layout.SemaphoreNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	for image := range componentValues {
		// The chart's appVersion is the tag: the lab's release charts carry the lab's.
		want := `image: "` + l.imagesRegistry() + "/" + image + ":"
		i := strings.Index(rel.Manifest, want)
		if i < 0 {
			t.Errorf("no pod runs %s", image)
			continue
		}
		line, _, _ := strings.Cut(rel.Manifest[i:], "\n")
		if !strings.HasSuffix(strings.Trim(line, `"`), "@"+digestOf(image)) {
			t.Errorf("%s runs %s, not by digest %s", image, line, digestOf(image))
		}
	}
}

// The pods' check accepts a pod that runs a component's image by the release's digest and
// names every other way a pod can run it.
func TestReleaseImageProblemsNameEveryContainerNotRunningTheReleasesDigest(t *testing.T) {
	l := &Lab{registry: "127.0.0.1:5000", imageTag: "0.0.0-lab.gabc"}
	digests := labDigests()
	image := ownership.Policy
	byDigest := l.imageRef(image) + "@" + digests[image]
	pod := func(spec, id string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: layout.SemaphoreNamespace, Name: "p"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: spec}, {Name: "other", Image: "127.0.0.1:5000/kube-semaphore/semaphore-lab-sample:x"}}},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", ImageID: id}}},
		}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		problems int
	}{
		{"by digest", pod(byDigest, l.imagesRegistry()+"/"+image+"@"+digests[image]), 0},
		{"by tag alone", pod(l.imageRef(image), l.imagesRegistry()+"/"+image+"@"+digests[image]), 1},
		{"another digest running", pod(byDigest, l.imagesRegistry()+"/"+image+"@"+digestOf("x")), 1},
		{"not running yet", pod(byDigest, ""), 1},
	} {
		checked, problems := l.podImageProblems("aws", tc.pod, digests)
		if checked != 1 || len(problems) != tc.problems {
			t.Errorf("%s: checked %d containers, problems %q; want 1 checked, %d problems", tc.name, checked, problems, tc.problems)
		}
	}
}

// writeBOM writes an SBOM about a subject of the given name and version, holding one library.
func writeBOM(t *testing.T, name, version string) string {
	t.Helper()
	bom := cdx.NewBOM()
	bom.SpecVersion = sbom.SpecVersion
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{Type: cdx.ComponentTypeApplication, Name: name, Version: version}}
	bom.Components = &[]cdx.Component{{Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: "go1.25.0"}}
	var buf bytes.Buffer
	if err := sbom.Write(&buf, bom); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".cdx.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// An SBOM passes only as a CycloneDX document about what it is named for, at the release's
// version.
func TestCheckSBOMRefusesAnSBOMOfAnythingElse(t *testing.T) {
	path := writeBOM(t, "kubectl-semaphore", "v0.0.0-lab.gabc")
	if err := checkSBOM(path, "kubectl-semaphore", "v0.0.0-lab.gabc"); err != nil {
		t.Errorf("the SBOM of kubectl-semaphore: %v", err)
	}
	if err := checkSBOM(path, "semaphore-policy", "v0.0.0-lab.gabc"); err == nil {
		t.Error("accepted kubectl-semaphore's SBOM as semaphore-policy's")
	}
	if err := checkSBOM(path, "kubectl-semaphore", "v1.0.0"); err == nil {
		t.Error("accepted the SBOM of another version")
	}
	notBOM := filepath.Join(t.TempDir(), "x.cdx.json")
	if err := os.WriteFile(notBOM, []byte(`{"kind":"nothing"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkSBOM(notBOM, "kubectl-semaphore", "v0.0.0-lab.gabc"); err == nil {
		t.Error("accepted a JSON document that is not CycloneDX")
	}
}

// What cosign verify prints passes only when every payload names the image and its digest.
func TestCheckSignedPayloadNeedsTheRepositoryAndDigest(t *testing.T) {
	const repo, digest = "127.0.0.1:5000/kube-semaphore/semaphore-policy", "sha256:d9e2"
	payload := func(r, d string) string {
		return `[{"critical":{"identity":{"docker-reference":"` + r + `"},"image":{"docker-manifest-digest":"` + d + `"},"type":"cosign container image signature"},"optional":null}]`
	}
	if err := checkSignedPayload(payload(repo, digest), repo, digest); err != nil {
		t.Errorf("refused the image's payload: %v", err)
	}
	for name, out := range map[string]string{
		"another digest":     payload(repo, "sha256:0000"),
		"another repository": payload("127.0.0.1:5000/kube-semaphore/semaphore-wireguard", digest),
		"no payload":         "[]",
		"not JSON":           "Verified OK",
	} {
		if err := checkSignedPayload(out, repo, digest); err == nil {
			t.Errorf("accepted %s", name)
		}
	}
}

// The image an SBOM of dist.ImageSBOMs is of comes from its name.
func TestImageOfSBOM(t *testing.T) {
	if got := imageOfSBOM("semaphore-service-mirror_v0.0.0-lab.gabc_linux_amd64.cdx.json", "v0.0.0-lab.gabc"); got != ownership.ServiceMirror {
		t.Errorf("imageOfSBOM = %q, want %q", got, ownership.ServiceMirror)
	}
}
