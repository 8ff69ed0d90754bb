#!/usr/bin/env bash
# Prints the path of promtool as the last line of stdout; progress goes to stderr. `make
# test-alerts` uses it to check the rule files under alerts/ and run their unit tests.
#
# promtool comes from Debian's `prometheus` package (not the Go module proxy like our other tools:
# Prometheus' main module is not `go install`-able at a release tag). When promtool is missing the
# package is installed with apt-get (ci/apt-install.sh: root or sudo, no service started). Only
# promtool is wanted, so a Prometheus server the package started anyway is stopped afterwards.
#
# A cold install on bookworm takes about 30 seconds (apt-get update included); with promtool on
# PATH it does nothing.
set -euo pipefail

if p=$(command -v promtool 2>/dev/null); then
	echo "$p"
	exit 0
fi

. "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
apt_install_quietly promtool.sh prometheus

# Belt and braces: never leave a Prometheus server running behind the caller's back.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
	"${sudo[@]}" systemctl stop prometheus >&2 || true
fi
if command -v pgrep >/dev/null && pid=$(pgrep -x prometheus 2>/dev/null); then
	echo "promtool.sh: stopping the prometheus service the package started" >&2
	if command -v service >/dev/null; then "${sudo[@]}" service prometheus stop >&2 || true; fi
	for p in $(pgrep -x prometheus 2>/dev/null || true); do
		# Only the packaged server (user prometheus), not a Prometheus someone else runs.
		if [[ $(ps -o user= -p "$p" 2>/dev/null) == prometheus ]]; then "${sudo[@]}" kill "$p" || true; fi
	done
fi

p=$(command -v promtool) || { echo "promtool.sh: promtool not found after installing prometheus" >&2; exit 1; }
"$p" --version >&2 || true
echo "$p"
