#!/usr/bin/env bash
# Builds krew and its manifest validator (validate-krew-manifest) from the Go module proxy and
# caches them outside git. Prints the directory that holds both as the last line of stdout;
# progress goes to stderr. `make release` validates the plugin's krew manifest with them and
# installs every archive with `krew install --manifest --archive`, krew's own offline install.
#
# A cold build takes about half a minute on 2 cores; when both are present it does nothing.
set -euo pipefail

KREW_VERSION=${KREW_VERSION:-v0.4.3}
. "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh"
out=$(tool_dir krew "$KREW_VERSION")
if [[ -x $out/krew && -x $out/validate-krew-manifest ]]; then
	echo "$out"
	exit 0
fi

echo "building krew $KREW_VERSION into $out" >&2
rm -rf "$out"
go_install_tool "$out" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" -trimpath \
	"sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
root=$(mktemp -d)
KREW_ROOT=$root "$out/krew" version >&2 || { rm -rf "$out" "$root"; exit 1; }
rm -rf "$root"
echo "$out"
