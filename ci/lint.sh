#!/usr/bin/env bash
# `make lint`: gofmt, go vet, golangci-lint (.golangci.yml, built by ci/golangci-lint.sh) and
# `make lint-charts`. All of them run, so one finding never hides another; it fails afterwards,
# naming what failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
failed=""

echo "gofmt -l"
unformatted=$(bash ci/go-files.sh | xargs -0 -r gofmt -l)
if [[ -n $unformatted ]]; then
	printf 'these files are not gofmt-formatted (run make fmt):\n%s\n' "$unformatted"
	failed+=" gofmt"
fi

echo "$GO vet ./..."
"$GO" vet ./... || failed+=" go-vet"

gl=$(bash ci/golangci-lint.sh | tail -n 1)
if [[ -z $gl ]]; then
	echo "lint: golangci-lint is not available (see above), skipping it"
else
	echo "golangci-lint run ./..."
	"$gl" run ./... || failed+=" golangci-lint"
fi

bash ci/lint-charts.sh || failed+=" lint-charts"

if [[ -n $failed ]]; then
	echo "lint: FAILED:$failed"
	exit 1
fi
