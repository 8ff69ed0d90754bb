#!/usr/bin/env bash
# Builds golangci-lint from the Go module proxy and caches it outside git. Prints the path of the
# binary as the last line of stdout.
#
# The version is pinned so every machine lints with the same rules; it must be built with a Go at
# least as new as go.mod's, which is why it is built here rather than downloaded as a release.
# If it cannot be built (no proxy, a Go too old for it), this says why on stderr, prints nothing
# and exits 0: `make lint` then skips golangci-lint with a note and still runs gofmt and go vet.
#
# A cold build takes about a minute on 2 cores; when the binary is present it does nothing.
set -euo pipefail

GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
. "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh"
out=$(tool_dir golangci-lint "$GOLANGCI_LINT_VERSION")
print_if_cached "$out/golangci-lint"

echo "building golangci-lint $GOLANGCI_LINT_VERSION into $out (cold build: about a minute)" >&2
if ! go_install_tool "$out" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"; then
	echo "golangci-lint $GOLANGCI_LINT_VERSION could not be built with $(go version); skipping it" >&2
	exit 0
fi
echo "$out/golangci-lint"
