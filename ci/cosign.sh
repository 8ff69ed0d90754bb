#!/usr/bin/env bash
# The independent verifiers of what internal/tooling/signing signs, for its tests (docs/verifying.md
# shows users the same commands). Prints the path of the tool as the last line of stdout;
# progress goes to stderr.
#
#   ci/cosign.sh           cosign, built from the Go module proxy and cached outside git
#   ci/cosign.sh openssl   openssl, Debian's package, installed with apt-get when missing
#                          (ci/apt-install.sh: root or sudo)
#
# cosign is installed with `go install pkg@version` outside this module (ci/go-tool.sh): it is a
# verifier independent of our code and must neither pin nor be pinned by our dependencies. The
# tests run it offline: with the public key, no Rekor, no Fulcio, no TUF root.
#
# A cold build of cosign takes about 4 minutes on 2 cores, the module download of a fresh
# machine included; when the binary is present it does nothing.
set -euo pipefail

if [[ ${1:-} == openssl ]]; then
	if ! command -v openssl >/dev/null; then
		. "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
		apt_install_quietly cosign.sh openssl
	fi
	command -v openssl
	exit 0
fi

COSIGN_VERSION=${COSIGN_VERSION:-v2.6.5}
. "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh"
out=$(tool_dir cosign "$COSIGN_VERSION")
print_if_cached "$out/cosign"

echo "building cosign $COSIGN_VERSION into $out (cold build: about 4 minutes)" >&2
# As cosign's Makefile does, the version goes in through -ldflags: `cosign version` shows it.
ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
go_install_tool "$out" "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION" -trimpath -ldflags="$ldflags"
# A binary that cannot even start (wrong platform, broken link) must not stay in the cache.
"$out/cosign" version --json >&2 || { rm -rf "$out"; exit 1; }
echo "$out/cosign"
