#!/usr/bin/env bash
# Prints the path of promtool as the last line of stdout; progress goes to stderr. `make
# test-alerts` uses it to check the rule files under alerts/ and run their unit tests.
#
# promtool comes from Debian's `prometheus` package (not the Go module proxy like our other tools:
# Prometheus' main module is not `go install`-able at a release tag). When promtool is missing the
# package is installed with apt-get, which needs root (or sudo). Only promtool is wanted, so the
# package's init scripts must not start a Prometheus server: a policy-rc.d that refuses every
# start is in place for the install, and the service is stopped afterwards should it run anyway
# (systemd-based postinst scripts may bypass policy-rc.d).
#
# A cold install on bookworm takes about 30 seconds (apt-get update included); with promtool on
# PATH it does nothing.
set -euo pipefail

if p=$(command -v promtool 2>/dev/null); then
	echo "$p"
	exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "promtool.sh: promtool is missing and installing it needs root (or sudo)" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "promtool.sh: installing Debian's prometheus package for promtool" >&2
policy=/usr/sbin/policy-rc.d
policy_backup=""
if [[ -e $policy ]]; then
	policy_backup=$(mktemp)
	"${sudo[@]}" cp -p "$policy" "$policy_backup"
fi
restore_policy() {
	if [[ -n $policy_backup ]]; then
		"${sudo[@]}" cp -p "$policy_backup" "$policy"
		rm -f "$policy_backup"
	else
		"${sudo[@]}" rm -f "$policy"
	fi
}
trap restore_policy EXIT
# Exit status 101: "action forbidden by policy" (invoke-rc.d(8)).
printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
"${sudo[@]}" chmod 0755 "$policy"

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >&2

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
