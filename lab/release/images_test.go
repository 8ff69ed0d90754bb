package release

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
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
	b := &Builder{Registry: "127.0.0.1:5000", Version: "v0.0.0-lab.gabc"}
	// The images from the lab's registry, as the lab's values say (lab/env's labValues).
	values := map[string]any{"global": map[string]any{
		"image":       map[string]any{"registry": b.ImagesRegistry()},
		"clusterName": layout.HostileConsumer,
	}}
	pinDigests(values, labDigests())
	rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), layout.UmbrellaRelease, layout.SemaphoreNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	for image := range componentValues {
		// The chart's appVersion is the tag: the lab's release charts carry the lab's.
		want := `image: "` + b.ImagesRegistry() + "/" + image + ":"
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
	b := &Builder{Registry: "127.0.0.1:5000", Version: "v0.0.0-lab.gabc"}
	digests := labDigests()
	image := ownership.Policy
	byDigest := b.ImageRef(image) + "@" + digests[image]
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
		{"by digest", pod(byDigest, b.ImagesRegistry()+"/"+image+"@"+digests[image]), 0},
		{"by tag alone", pod(b.ImageRef(image), b.ImagesRegistry()+"/"+image+"@"+digests[image]), 1},
		{"another digest running", pod(byDigest, b.ImagesRegistry()+"/"+image+"@"+digestOf("x")), 1},
		{"not running yet", pod(byDigest, ""), 1},
	} {
		checked, problems := b.PodImageProblems("aws", tc.pod, digests)
		if checked != 1 || len(problems) != tc.problems {
			t.Errorf("%s: checked %d containers, problems %q; want 1 checked, %d problems", tc.name, checked, problems, tc.problems)
		}
	}
}
