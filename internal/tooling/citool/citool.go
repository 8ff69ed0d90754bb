// Package citool runs the scripts under ci/ that build or find a tool (CoreDNS, krew, the
// Kubernetes binaries, ...) and cache it: each prints the path of what it built as its last
// line of stdout and its progress on stderr.
package citool

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// Path runs the script ci/<script> of the repository at root with args and returns the last
// line it prints: the path of what it built, or found in its cache. The script's progress goes
// to stderr (nil drops it).
func Path(stderr io.Writer, root, script string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "ci", script)}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", strings.Join(append([]string{"ci/" + script}, args...), " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
