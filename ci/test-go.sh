#!/usr/bin/env bash
# `make test-go`: the Go tests (unit and integration) of PKGS (default ./...), with the
# kube-apiserver and etcd that envtest needs (ci/kube-binaries.sh, cached), then the tests that
# skipped and why. Settings come from the environment, set by the Makefile: PKGS, GO,
# TEST_PARALLEL, TEST_TIMEOUT, GOTESTFLAGS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
read -r -a pkgs <<<"${PKGS:-./...}"
read -r -a flags <<<"${GOTESTFLAGS:--v}"

# ci/kube-binaries.sh prints its progress on stderr (a cold build takes minutes) and the
# directory as its last stdout line.
assets=${KUBEBUILDER_ASSETS:-$(bash ci/kube-binaries.sh | tail -n 1)}
if [[ -z $assets ]]; then
	echo "test-go: ci/kube-binaries.sh printed no directory"
	exit 1
fi
echo "KUBEBUILDER_ASSETS=$assets"
export KUBEBUILDER_ASSETS=$assets

# Tests find CoreDNS by running ci/coredns.sh themselves, but go test holds a package's output
# until the package finishes; building it beforehand keeps a cold build's progress visible.
bash ci/coredns.sh >/dev/null
# The same for the verifiers internal/tooling/signing's tests run: cosign (about 4 minutes cold), openssl.
bash ci/cosign.sh >/dev/null
bash ci/cosign.sh openssl >/dev/null

# As root the tests run real nodes (lab/node) and network namespaces (test/datapath): what they
# need from Debian (ci/node-packages.sh) is installed, and kubelet, kube-proxy and the rest of
# the Kubernetes binaries are built, before any test starts, so that nothing skips for want of
# what `make test` provides (in CI such a skip fails: testenv.SkipForMissing). Without root
# those tests skip for want of root, and nothing is installed.
if [[ $(id -u) == 0 ]]; then
	bash ci/node-packages.sh
	bash ci/kube-binaries.sh all >/dev/null
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cmd=("$GO" test -count=1 -p "${TEST_PARALLEL:-2}" -timeout "${TEST_TIMEOUT:-40m}" "${flags[@]}" "${pkgs[@]}")
echo "+ ${cmd[*]}"
"${cmd[@]}" 2>&1 | tee "$log" || status=$?

# The tests that skipped and why, where a CI log shows them at a glance: as root with `make
# test`'s tools, only what the machine cannot offer should be there. With -v a test's log lines
# stream before its result line: the reason is the test's last `file.go:N:` line.
awk '/^=== RUN / { cur = $3; last[cur] = ""; next }
	/^=== CONT / { cur = $3; next }
	/^ *--- SKIP: / { n++; skips = skips "  " $3 ": " last[$3] "\n"; next }
	cur != "" && /^ +[^ ]+\.go:[0-9]+: / { line = $0; sub(/^ +/, "", line); last[cur] = line }
	END { printf "test-go: %d tests skipped%s\n%s", n, (n ? ":" : ""), skips }' "$log"
exit "$status"
