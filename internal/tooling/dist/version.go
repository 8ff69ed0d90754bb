package dist

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// SnapshotVersion is the version of a build of the tree at root that is no release: kind (say
// "snapshot", "lab") and the commit, v0.0.0-<kind>.g<commit>, with .dirty when the tree has
// changes no commit holds. It is SemVer, as chart versions must be, and sorts before any
// release.
func SnapshotVersion(ctx context.Context, root, kind string) (string, error) {
	rev, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	v := fmt.Sprintf("v0.0.0-%s.g%s", kind, strings.TrimSpace(string(rev)))
	status, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain").Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	if len(strings.TrimSpace(string(status))) > 0 {
		v += ".dirty"
	}
	return v, nil
}
