package status

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// Show prints the status of the lab running in dir (`lab status`), and returns the command's
// exit code: 1 when no lab runs there, or it is not up and healthy.
func Show(ctx context.Context, dir string) int {
	pid, rec, ok, err := layout.Running(dir)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	case !ok && pid == 0 && rec == nil:
		fmt.Printf("No lab is running in %s. Start one with `make lab` (bash ci/lab).\n", dir)
		return 1
	case !ok:
		fmt.Printf("The lab (pid %d) in %s is not running any more; `make lab-down` (bash ci/lab down) cleans up after it.\n", pid, dir)
		return 1
	case rec == nil || rec.Phase == layout.PhaseStarting:
		fmt.Printf("The lab (pid %d) in %s is still starting.\n", pid, dir)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := Collect(ctx, rec)
	s.Print(os.Stdout, rec)
	problems := s.Problems(rec)
	PrintProblems(os.Stdout, problems)
	if rec.Phase != layout.PhaseUp || len(problems) > 0 {
		return 1
	}
	return 0
}
