#!/usr/bin/env bash
# `make lint-charts`: every chart that has ci/*-values.yaml scenarios gets `helm lint --strict`
# with each, and a render, because helm lint reports a template's fail() only as [INFO]. helm is
# built from the module proxy by ci/helm.sh. The Go tests in test/charts go much further.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
helm=$(bash ci/helm.sh | tail -n 1)
failed=""
for values in $(find charts -path '*/ci/*-values.yaml' | sort); do
	chart=${values%/ci/*}
	if ! out=$("$helm" lint --strict "$chart" -f "$values" 2>&1); then
		echo "$out"
		failed+=" $values"
		continue
	fi
	if ! out=$("$helm" template lint-check "$chart" -f "$values" 2>&1 >/dev/null); then
		echo "$out"
		failed+=" $values"
		continue
	fi
	echo "lint-charts: $chart with ${values##*/}: ok"
done
if [[ -n $failed ]]; then
	echo "lint-charts: FAILED:$failed"
	exit 1
fi
