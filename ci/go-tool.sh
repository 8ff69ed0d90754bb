# Sourced by the ci/ scripts that build a Go tool from the module proxy into the cache
# ($SEMAPHORE_CACHE_DIR, default ~/.cache/semaphore): golangci-lint and helm. The tool is built
# with `go install pkg@version` from a throwaway directory, so that neither this module's go.mod
# nor a go.work constrains or records the tool's dependencies. The calling script prints the
# binary's path as its last line of stdout; progress goes to stderr.

CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}

# tool_dir NAME VERSION prints where the tool is cached.
tool_dir() { echo "$CACHE_DIR/$1/$2"; }

# print_if_cached BINARY prints BINARY and exits when it is there: nothing to build.
print_if_cached() {
	if [[ -x $1 ]]; then
		echo "$1"
		exit 0
	fi
}

# module_go_mod MODULE@VERSION prints the path of that module's go.mod in the module cache.
module_go_mod() {
	local dir status=0
	dir=$(mktemp -d)
	(cd "$dir" && GOFLAGS=-mod=mod GOWORK=off go mod download -json "$1") |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' || status=$?
	rm -rf "$dir"
	return "$status"
}

# go_install_tool DIR PACKAGE@VERSION [go install flags...] builds the package into DIR: into a
# temporary directory beside it first, moved into place only when the build succeeded. It works
# in a temporary directory of its own and returns go install's status.
go_install_tool() {
	local dir=$1 pkg=$2
	shift 2
	mkdir -p "$(dirname "$dir")"
	local tmp start=$SECONDS
	tmp=$(mktemp -d "$dir.tmp.XXXXXX")
	if ! (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 go install "$@" "$pkg" >&2); then
		rm -rf "$tmp"
		return 1
	fi
	echo "built $pkg in $((SECONDS - start)) s" >&2
	rm -rf "$dir"
	chmod 755 "$tmp"
	mv "$tmp" "$dir"
}
