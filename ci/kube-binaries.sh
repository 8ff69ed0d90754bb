#!/usr/bin/env bash
# Builds the Kubernetes test binaries (kube-apiserver and the etcd it is released with) from the Go
# module proxy and caches them outside git. Prints the directory that holds them, which is what
# envtest wants in KUBEBUILDER_ASSETS.
#
# k8s.io/kubernetes cannot be required as an ordinary module: its go.mod replaces every staging
# module (k8s.io/api, k8s.io/client-go, ...) with a path inside its own tree. A throwaway wrapper
# module requires it and points each staging module at the matching published v0.X.Y instead.
# etcd's server builds from the same wrapper, at the version kubernetes itself requires.
#
#   bash ci/kube-binaries.sh             kube-apiserver and etcd (what the integration tests need)
#   bash ci/kube-binaries.sh all         also kube-controller-manager, kube-scheduler, kubelet and
#                                        kube-proxy (what the lab's real clusters and nodes need)
#
# A cold build of the first two takes about 6 minutes on 2 cores, the other four about 5 more;
# binaries already present are not built again.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.36.3}
CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}
# The -r suffix is the build recipe's revision: bump it when the build changes, so caches of
# the old recipe are not reused.
out="$CACHE_DIR/kube/v$KUBE_VERSION-r2"

kube_cmds=(kube-apiserver)
if [[ ${1:-} == all ]]; then
	kube_cmds+=(kube-controller-manager kube-scheduler kubelet kube-proxy)
fi
missing=()
for cmd in etcd "${kube_cmds[@]}"; do
	[[ -x "$out/$cmd" ]] || missing+=("$cmd")
done
if [[ ${#missing[@]} == 0 ]]; then
	echo "$out"
	exit 0
fi

staging_version="v0.${KUBE_VERSION#1.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building ${missing[*]} (Kubernetes v$KUBE_VERSION) into $out (cold: minutes each)" >&2

cd "$work"
# The wrapper needs no GOFLAGS from the caller (e.g. -mod=vendor from a product checkout).
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
go mod init semaphore.local/kube-binaries >/dev/null 2>&1
go mod edit -go=1.26 -require="k8s.io/kubernetes@v$KUBE_VERSION"
go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" >/dev/null
kube_dir=$(go list -m -f '{{.Dir}}' "k8s.io/kubernetes" 2>/dev/null || true)
if [[ -z "$kube_dir" ]]; then
	kube_dir=$(go env GOMODCACHE)/k8s.io/kubernetes@v$KUBE_VERSION
fi
# Every staging module kubernetes replaces with a local path, pointed at its published version.
for mod in $(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$kube_dir/go.mod"); do
	go mod edit -replace="$mod=$mod@$staging_version"
done
etcd_version=$(sed -n 's#^[[:space:]]*go\.etcd\.io/etcd/server/v3 \(v[0-9.]*\).*#\1#p' "$kube_dir/go.mod")
go mod edit -require="go.etcd.io/etcd/server/v3@$etcd_version"
cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
go mod tidy >&2
mkdir -p "$out"
# Without the version stamped in, kube-apiserver reports v0.0.0-master and clients that check
# the server version (helm's kubeVersion constraints, kubectl) refuse it.
minor=${KUBE_VERSION#1.}
minor=${minor%%.*}
version_flags="-X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
# Each binary is built under a temporary name of this process's own and renamed, so an
# interrupted build never leaves a binary that looks complete, and two builds running at once
# (two test binaries, a test and the lab) do not take each other's file.
for cmd in "${missing[@]}"; do
	tmp="$out/.$cmd.$$.tmp"
	start=$SECONDS
	if [[ $cmd == etcd ]]; then
		go build -trimpath -ldflags=-s -o "$tmp" go.etcd.io/etcd/server/v3 >&2
	else
		go build -trimpath -ldflags="-s $version_flags" -o "$tmp" "k8s.io/kubernetes/cmd/$cmd" >&2
	fi
	mv -f "$tmp" "$out/$cmd"
	echo "built $cmd in $((SECONDS - start)) s" >&2
done
echo "$out"
