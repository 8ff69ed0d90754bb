package release

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/internal/tooling/images"
)

// The lab installs the components' images by tag and digest, as docs/verifying.md asks users
// to: each component's image.digest in the umbrella chart's values is the digest of the index
// the lab pushed and signed, so the pods run <registry>/kube-semaphore/<image>:<tag>@sha256:...

// componentValues are the umbrella chart's values of each component image: its subchart's
// alias.
var componentValues = map[string]string{
	ownership.ServiceMirror: "serviceMirror",
	ownership.Policy:        "policy",
	ownership.WireGuard:     "wireguard",
}

// ImageDigests are the digests of the components' image indexes, by image name: what their
// tags are in the lab's registry.
func (b *Builder) ImageDigests(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, spec := range images.Components() {
		ref, err := name.ParseReference(b.ImageRef(spec.Name), name.Insecure)
		if err != nil {
			return nil, err
		}
		desc, err := remote.Head(ref, remote.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("the digest of %s: %w", ref, err)
		}
		out[spec.Name] = desc.Digest.String()
	}
	return out, nil
}

// PinDigests sets each component's image.digest in values, the umbrella chart's.
func (b *Builder) PinDigests(ctx context.Context, values map[string]any) error {
	digests, err := b.ImageDigests(ctx)
	if err != nil {
		return err
	}
	pinDigests(values, digests)
	return nil
}

// pinDigests sets each component's image.digest in values to its digest in digests.
func pinDigests(values map[string]any, digests map[string]string) {
	for image, key := range componentValues {
		component, ok := values[key].(map[string]any)
		if !ok {
			component = map[string]any{}
			values[key] = component
		}
		component["image"] = map[string]any{"digest": digests[image]}
	}
}

// PodImageProblems checks the containers of pod that run a component's image of the lab's
// registry against digests; it returns how many it checked and what is wrong with them.
func (b *Builder) PodImageProblems(cluster string, pod *corev1.Pod, digests map[string]string) (int, []string) {
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		statuses[s.Name] = s
	}
	checked := 0
	var problems []string
	for _, c := range pod.Spec.Containers {
		image := componentOf(c.Image, b.ImagesRegistry())
		if image == "" {
			continue
		}
		checked++
		where := fmt.Sprintf("%s: pod %s/%s, container %s", cluster, pod.Namespace, pod.Name, c.Name)
		if want := b.ImageRef(image) + "@" + digests[image]; c.Image != want {
			problems = append(problems, fmt.Sprintf("%s runs %s, not the release's %s", where, c.Image, want))
		}
		if s, ok := statuses[c.Name]; !ok || !strings.HasSuffix(s.ImageID, "@"+digests[image]) {
			problems = append(problems, fmt.Sprintf("%s: its node runs the image %q, not digest %s", where, s.ImageID, digests[image]))
		}
	}
	return checked, problems
}

// componentOf is the component image that ref names in registry, "" when it names none.
func componentOf(ref, registry string) string {
	rest, ok := strings.CutPrefix(ref, registry+"/")
	if !ok {
		return ""
	}
	image, _, _ := strings.Cut(rest, "@")
	image, _, _ = strings.Cut(image, ":")
	if _, ok := componentValues[image]; !ok {
		return ""
	}
	return image
}
