#!/usr/bin/env bash
# `make conformance`: the upstream MCS conformance suite (third_party/mcs-api-conformance)
# against the lab's clusters, aws and gcp, then aws, gcp and merit (lab/cmd/conformance; the
# reports go to .lab/conformance/<n>-clusters/; docs/mcs.md#conformance).
#
#   bash ci/conformance.sh [flags of lab/cmd/conformance] [-- flags of the suite]
#
# CONFORMANCE_LABELS is ginkgo's label filter: CONFORMANCE_LABELS=Required runs only the specs
# every implementation must pass. A lab that runs already is used and left running; otherwise
# this brings one up in the background (its output in .lab/conformance/lab.log) and takes it
# down afterwards, unless CONFORMANCE_KEEP_LAB=1 (then `make lab-down` stops it). Exit 0 when
# every run of the suite passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
out=.lab/conformance
mkdir -p "$out"

lab_pid=""
if ! { [[ -f .lab/lab.pid ]] && kill -0 "$(cat .lab/lab.pid)" 2>/dev/null; }; then
	echo "conformance: no lab runs; bringing one up (about 2 minutes warm; its output: $out/lab.log)" >&2
	bash ci/lab up >"$out/lab.log" 2>&1 &
	lab_pid=$!
	if [[ ${CONFORMANCE_KEEP_LAB:-} != 1 ]]; then
		trap 'echo "conformance: taking the lab down" >&2; bash ci/lab down >>"$out/lab.log" 2>&1 || true; wait "$lab_pid" || true' EXIT
	fi
fi

"$GO" run ./lab/cmd/conformance -labels "${CONFORMANCE_LABELS:-}" -wait 30m ${lab_pid:+-lab-pid "$lab_pid"} "$@"
