#!/usr/bin/env bash
# Builds Calico's binaries from the Go module proxy and caches them outside git, next to the
# Kubernetes binaries, with the release's CRDs and manifests. Prints the directory as the last
# line of stdout; progress goes to stderr. The lab runs them in every cluster (docs/calico.md).
#
#   calico-node        calico-node -startup (datastore and Node set-up) and calico-node -felix
#   calico             the CNI plugin; the same binary is calico-ipam when called by that name
#   kube-controllers   Calico's kube-controllers (IPAM garbage collection, node clean-up)
#   calico-apiserver   the aggregated API server for projectcalico.org/v3
#   crds.yaml, calico.yaml, apiserver.yaml   the release's CRDs and manifests (RBAC)
#
# Calico's repository is one Go module whose go.mod replaces its api module with a path inside
# the tree that the module's zip leaves out, and pins every Kubernetes module. A throwaway
# wrapper module requires it at the commit of the release, copies those replaces, and points the
# api module at its own published commit. CGO_ENABLED=0: Felix then has its iptables/nftables
# dataplane only (no BPF), which is the one the lab uses.
#
# A cold build takes about 6 minutes on 2 cores (Felix is most of it); when every binary is
# present it does nothing.
set -euo pipefail

CALICO_VERSION=v3.28.5
# The release's commit on the module proxy, and the api module's commit that release was cut with.
CALICO_MODULE=github.com/projectcalico/calico@v1.11.0-cni-plugin.0.20250813170300-a0db560f0520
CALICO_API=github.com/projectcalico/api@v0.0.0-20240708202104-e3f70b269c2c
CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}
out="$CACHE_DIR/calico/$CALICO_VERSION"

declare -A pkgs=(
	[calico-node]=node/cmd/calico-node
	[calico]=cni-plugin/cmd/calico
	[kube-controllers]=kube-controllers/cmd/kube-controllers
	[calico-apiserver]=apiserver/cmd/apiserver
)
missing=()
for cmd in "${!pkgs[@]}"; do
	[[ -x "$out/$cmd" ]] || missing+=("$cmd")
done
if [[ ${#missing[@]} == 0 && -f "$out/crds.yaml" ]]; then
	echo "$out"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building Calico $CALICO_VERSION (${missing[*]}) into $out (cold: about 6 minutes)" >&2
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
go mod init semaphore.local/calico >/dev/null 2>&1
go mod edit -go=1.26 -require="$CALICO_MODULE"
dir=$(go mod download -json "$CALICO_MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
# Calico's own replaces (all but the api module's local path), then the api module's.
for r in $(sed -n '/^replace (/,/^)/s#^[[:space:]]*\([^ /][^ ]*\) => \([^ .][^ ]*\) \(v[^ ]*\)$#\1=\2@\3#p' "$dir/go.mod"); do
	go mod edit -replace="$r"
done
go mod edit -replace="github.com/projectcalico/api=$CALICO_API"
{
	echo '//go:build tools'
	echo
	echo 'package tools'
	echo
	echo 'import ('
	for cmd in "${!pkgs[@]}"; do echo "	_ \"github.com/projectcalico/calico/${pkgs[$cmd]}\""; done
	echo ')'
} >tools.go
# -e: a Windows-only dependency (hcsshim) is not served; nothing built here imports it.
go mod tidy -e >&2
mkdir -p "$out"
version_flags="-X github.com/projectcalico/calico/pkg/buildinfo.Version=$CALICO_VERSION -X main.VERSION=$CALICO_VERSION"
for cmd in "${missing[@]}"; do
	tmp="$out/.$cmd.$$.tmp"
	start=$SECONDS
	go build -trimpath -ldflags="-s $version_flags" -o "$tmp" "github.com/projectcalico/calico/${pkgs[$cmd]}" >&2
	mv -f "$tmp" "$out/$cmd"
	echo "built $cmd in $((SECONDS - start)) s" >&2
done
cp "$dir/manifests/crds.yaml" "$dir/manifests/calico.yaml" "$dir/manifests/apiserver.yaml" "$out/"
chmod u+w "$out"/*.yaml
echo "$out"
