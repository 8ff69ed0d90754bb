package scenarios

import (
	"context"
	"fmt"

	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// checkGuide runs the getting-started guide's last section, its check of every cluster, as
// its reader would: the lab installed everything by following the guide's sections before it,
// so the guide's commands are shown to work from beginning to end.
func checkGuide(ctx context.Context, l *env.Lab) []string {
	if !l.NodesRun() {
		return nil // no pods, no controllers: nothing for its check to pass
	}
	fmt.Fprintf(l.Out(), "The getting-started guide's check (%s, section %q; output in %s)\n", layout.GuideFile, layout.GuideCheckSection, l.Path("logs", "guide-check.log"))
	if err := l.RunGuideCheck(ctx); err != nil {
		return []string{fmt.Sprintf("the guide's check: %v", err)}
	}
	fmt.Fprintln(l.Out(), "  passed in every cluster")
	return nil
}
