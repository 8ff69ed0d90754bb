#!/usr/bin/env bash
# `make test`, what CI runs (.ci/run) and what the README tells contributors to run: each step
# given as an argument (make targets: lint, verify, test-go, lab-check, test-alerts) in order.
# All of them always run, so a formatting slip never hides test results; lint and verify go first
# because they take seconds and the tests take many minutes. It fails if any of them failed, and
# says which, and how long each took (a cold run's time goes mostly to building tools:
# docs/development.md).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
failed="" took=""
for step in "$@"; do
	start=$SECONDS
	make "$step" || failed+=" $step"
	d=$((SECONDS - start))
	took+=", $step $((d / 60))m$((d % 60))s"
done
echo "make test: took ${took#, } ($((SECONDS / 60))m$((SECONDS % 60))s in all)"
if [[ -n $failed ]]; then
	echo "make test: FAILED:$failed"
	exit 1
fi
echo "make test: lint, verify and tests passed"
