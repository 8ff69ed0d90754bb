package env

import (
	"context"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The release the lab installs, as users get one, is lab/release's: the lab's parts build,
// push, sign and verify it through l.labRelease. What of it needs the clusters is here.

// releaseDir is where, in the lab directory, the lab's release goes.
const releaseDir = "release"

// labPlatform is this machine's platform, the one platform the lab builds its release for.
const labPlatform = "linux/" + runtime.GOARCH

// ReleaseImageProblems checks that every container of the semaphore namespace that runs a
// component's image runs it by the release's digest: its image is
// <registry>/kube-semaphore/<image>:<tag>@<digest> and the image its node runs has that digest.
// It returns how many containers it checked, and the problems it found.
func (l *Lab) ReleaseImageProblems(ctx context.Context) (int, []string, error) {
	digests, err := l.labRelease.ImageDigests(ctx)
	if err != nil {
		return 0, nil, err
	}
	checked := 0
	var problems []string
	for _, cluster := range layout.ClusterNames() {
		pods, err := l.clusters[cluster].Client.CoreV1().Pods(layout.SemaphoreNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, nil, err
		}
		for _, pod := range pods.Items {
			n, p := l.labRelease.PodImageProblems(cluster, &pod, digests)
			checked += n
			problems = append(problems, p...)
		}
	}
	if checked == 0 {
		problems = append(problems, "no container runs a component's image")
	}
	return checked, problems, nil
}
