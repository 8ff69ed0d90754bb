#!/usr/bin/env bash
# `make test-alerts`: `promtool check rules` on every rule file under alerts/ and `promtool test
# rules` on their unit tests (alerts/*_test.yaml: every alert fires in one case and stays quiet in
# another). promtool comes from Debian's prometheus package, installed by ci/promtool.sh when
# missing. Both run, then it fails if either failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
promtool=$(bash ci/promtool.sh | tail -n 1)
if [[ -z $promtool ]]; then
	echo "test-alerts: ci/promtool.sh printed no path"
	exit 1
fi
shopt -s nullglob
rules=() tests=()
for f in alerts/*.yaml; do
	case ${f##*/} in
	*_test.yaml | *.test.yaml) tests+=("$f") ;;
	*) rules+=("$f") ;;
	esac
done
if [[ ${#rules[@]} -eq 0 ]]; then
	echo "test-alerts: no alerts/*.yaml, nothing to check"
	exit 0
fi
failed=""
"$promtool" check rules "${rules[@]}" || failed+=" check"
if [[ ${#tests[@]} -gt 0 ]]; then
	"$promtool" test rules "${tests[@]}" || failed+=" test"
fi
if [[ -n $failed ]]; then
	echo "test-alerts: FAILED:$failed"
	exit 1
fi
echo "test-alerts: ${#rules[@]} rule files checked, ${#tests[@]} test files passed"
