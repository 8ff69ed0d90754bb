package sbom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// DebianPackageVersion is the version of the Debian package pkg installed on this machine, as
// dpkg-query reports it (ca-certificates: "20230311+deb12u1"), or "" when there is no
// dpkg-query (not Debian or Ubuntu) or pkg is not installed. The images' CA bundle comes from
// the build machine's ca-certificates package: its version goes into Image.
func DebianPackageVersion(ctx context.Context, pkg string) (string, error) {
	dpkgQuery, err := exec.LookPath("dpkg-query")
	if err != nil {
		return "", nil //nolint:nilerr // no dpkg: the version is unknown, which is no error
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, dpkgQuery, "-W", "-f", "${db:Status-Status} ${Version}", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", nil // dpkg-query -W: "no packages found matching"
	}
	if err != nil {
		return "", fmt.Errorf("dpkg-query -W %s: %w: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	status, version, _ := strings.Cut(string(out), " ")
	if status != "installed" {
		return "", nil // known to dpkg but removed (config-files) or half installed
	}
	return version, nil
}
