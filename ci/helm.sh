#!/usr/bin/env bash
# Builds helm from the Go module proxy and caches it outside git. Prints the path of the binary as
# the last line of stdout; progress goes to stderr. Chart checks (`helm lint --strict` over every
# charts/*/ci/*-values.yaml scenario) and developers use it; chart-testing (ct) is not reachable
# from these machines, so ct.yaml is kept for other CI but not run here.
#
# helm is installed with `go install pkg@version` from a throwaway directory so that neither this
# module's go.mod nor a go.work constrains or records helm's dependencies (helm pins its own
# k8s.io/* versions, which need not match ours).
#
# A cold build takes about 2 minutes on 2 cores (plus the module download on a fresh machine);
# when the binary is present it does nothing.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.21.4}
CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}
out="$CACHE_DIR/helm/$HELM_VERSION"

if [[ -x "$out/helm" ]]; then
	echo "$out/helm"
	exit 0
fi

echo "building helm $HELM_VERSION into $out (cold build: about 2 minutes)" >&2
mkdir -p "$CACHE_DIR/helm"
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
# `go install` does not set what helm's own Makefile sets through -ldflags: its version, and the
# Kubernetes version that `helm lint` and `helm template` assume when no cluster is asked. Left
# alone that is v1.20.0, which fails every chart with kubeVersion ">=1.29.0-0". As in helm's
# Makefile, it is derived from the client-go helm requires (v0.X.Y is Kubernetes 1.X).
helm_mod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
client_go=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$helm_mod")
if [[ -z "$client_go" ]]; then
	echo "cannot find the k8s.io/client-go version in $helm_mod" >&2
	exit 1
fi
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go"
done
GOBIN="$tmp" go install -trimpath -ldflags="$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
# A binary that cannot even start (wrong platform, broken link) must not land in the cache.
"$tmp/helm" version --short >&2
rm -rf "$out"
chmod 755 "$tmp"
mv "$tmp" "$out"
echo "$out/helm"
