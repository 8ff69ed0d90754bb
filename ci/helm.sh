#!/usr/bin/env bash
# Builds helm from the Go module proxy and caches it outside git. Prints the path of the binary as
# the last line of stdout; progress goes to stderr. Chart checks (`helm lint --strict` over every
# charts/*/ci/*-values.yaml scenario) and developers use it; chart-testing (ct) is not reachable
# from these machines, so ct.yaml is kept for other CI but not run here.
#
# helm is installed with `go install pkg@version` outside this module (ci/go-tool.sh): helm pins
# its own k8s.io/* versions, which need not match ours.
#
# A cold build takes about 2 minutes on 2 cores (plus the module download on a fresh machine);
# when the binary is present it does nothing.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.21.4}
. "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh"
out=$(tool_dir helm "$HELM_VERSION")
print_if_cached "$out/helm"

echo "building helm $HELM_VERSION into $out (cold build: about 2 minutes)" >&2
# `go install` does not set what helm's own Makefile sets through -ldflags: its version, and the
# Kubernetes version that `helm lint` and `helm template` assume when no cluster is asked. Left
# alone that is v1.20.0, which fails every chart with kubeVersion ">=1.29.0-0". As in helm's
# Makefile, it is derived from the client-go helm requires (v0.X.Y is Kubernetes 1.X).
helm_mod=$(module_go_mod "helm.sh/helm/v3@$HELM_VERSION")
client_go=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$helm_mod")
if [[ -z "$client_go" ]]; then
	echo "cannot find the k8s.io/client-go version in $helm_mod" >&2
	exit 1
fi
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go"
done
go_install_tool "$out" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" -trimpath -ldflags="$ldflags"
# A binary that cannot even start (wrong platform, broken link) must not stay in the cache.
"$out/helm" version --short >&2 || { rm -rf "$out"; exit 1; }
echo "$out/helm"
