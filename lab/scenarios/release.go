package scenarios

import (
	"context"
	"fmt"

	"github.com/kube-semaphore/semaphore/lab/env"
)

// checkReleaseImages checks that every container of the components runs the lab's release's
// image by tag and digest (the digest of the index the lab pushed, signed and verified), as
// docs/verifying.md asks users to install a release.
func checkReleaseImages(ctx context.Context, l *env.Lab) []string {
	if !l.NodesRun() {
		return nil // no pods
	}
	checked, problems, err := l.ReleaseImageProblems(ctx)
	if err != nil {
		return []string{fmt.Sprintf("the release's images: %v", err)}
	}
	fmt.Fprintf(l.Out(), "The release's images: %d containers of the components run them by digest\n", checked)
	return problems
}
