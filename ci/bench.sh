#!/usr/bin/env bash
# `make bench`: every benchmark, one package at a time so that they do not compete for the two
# cores, against real API servers. BENCHTIME (default 1x) is go test's -benchtime. The service
# mirror's package takes about 37 minutes (the original tool it is compared with, and 20 remote
# clusters), 50 with SEMAPHORE_BENCH_LONG=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
mapfile -t pkgs < <({ grep -rlE --include='*_test.go' --exclude-dir=testdata '^func Benchmark' components internal lab test || true; } |
	xargs -r -n 1 dirname | sort -u | sed 's|^|./|')
if [[ ${#pkgs[@]} -eq 0 ]]; then
	echo "bench: no benchmarks yet"
	exit 0
fi
assets=${KUBEBUILDER_ASSETS:-$(bash ci/kube-binaries.sh | tail -n 1)}
if [[ -z $assets ]]; then
	echo "bench: ci/kube-binaries.sh printed no directory"
	exit 1
fi
export KUBEBUILDER_ASSETS=$assets
bash ci/coredns.sh >/dev/null
set -x
"$GO" test -count=1 -p 1 -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1x}" -timeout 120m "${pkgs[@]}"
