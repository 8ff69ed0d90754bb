#!/usr/bin/env bash
# Builds a CoreDNS binary from the Go module proxy and caches it outside git. Prints the path of
# the binary as the last line of stdout; progress goes to stderr. Tests and the local lab use it
# to check, against a real API server, the Corefile that docs/coredns.md tells users to deploy.
#
# The build happens in a throwaway wrapper module so that CoreDNS's dependencies (cloud SDKs,
# gRPC, its own client-go) never reach the product's go.mod. The wrapper's main compiles in only
# the plugins a Kubernetes Corefile uses, the way CoreDNS documents for custom builds: import
# coremain and the plugin packages, and set dnsserver.Directives. Directives is the order in
# which plugins see a query, whatever order the Corefile lists them in, so it must keep the
# relative order of CoreDNS's own plugin.cfg (rewrite before cache before kubernetes, ...).
#
# A cold build takes about 2.5 minutes on 2 cores (with the modules already downloaded); when
# the binary is present and was built from the main.go below, it does nothing.
set -euo pipefail

COREDNS_VERSION=${COREDNS_VERSION:-1.14.7}
CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}
out="$CACHE_DIR/coredns/v$COREDNS_VERSION"

main_go=$(
	cat <<'GO'
// Command coredns is CoreDNS with only the plugins a Kubernetes cluster's Corefile uses, plus
// bind, which tests use to listen on 127.0.0.1 only.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
)

// directives is plugin.cfg's order, restricted to the plugins imported above ("prometheus" is
// the directive of the metrics package).
var directives = []string{
	"reload",
	"bind",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"rewrite",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
GO
)

# The cached main.go tells whether the cached binary has the plugins listed above: a changed
# list rebuilds it even though the version is the same.
if [[ -x "$out/coredns" && "$(cat "$out/main.go" 2>/dev/null)" == "$main_go" ]]; then
	echo "$out/coredns"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work" "$out.tmp"' EXIT
echo "building coredns v$COREDNS_VERSION into $out (cold build: about 2.5 minutes)" >&2

cd "$work"
# The wrapper needs no GOFLAGS from the caller (e.g. -mod=vendor from a product checkout).
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
go mod init semaphore.local/coredns >/dev/null 2>&1
go mod edit -go=1.26 -require="github.com/coredns/coredns@v$COREDNS_VERSION"
printf '%s\n' "$main_go" >main.go
go mod tidy >&2
mkdir -p "$out.tmp"
cp main.go "$out.tmp/main.go"
go build -trimpath -ldflags=-s -o "$out.tmp/coredns" . >&2
# A binary that cannot even start (wrong platform, broken link) must not land in the cache.
"$out.tmp/coredns" -version >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "built coredns in $SECONDS s" >&2
echo "$out/coredns"
