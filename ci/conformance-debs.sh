#!/usr/bin/env bash
# Fetches the Debian packages that the MCS conformance suite's two images are assembled from
# (lab/conformance: stand-ins for alpine/socat and nicolaka/netshoot, which cannot be pulled
# here), unpacks them into one directory and prints that directory as the last line of stdout;
# progress goes to stderr. The packages are Debian's, for this machine's architecture, downloaded
# with `apt-get download` (nothing is installed) and cached outside git with what they unpack to:
# a second run needs no network. The images take only the programs the suite runs and the
# libraries those need, found from the programs themselves (lab/conformance says which).
#
# Cold: about 10 MB from Debian, a few seconds; warm it does nothing.
set -euo pipefail

CACHE_DIR=${SEMAPHORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/semaphore}
# sh is dash (busybox-static's sh would run its own nc rather than OpenBSD's, which the suite's
# flags need); busybox-static is the rest of the shell's tools (grep, awk, nslookup...); socat
# and netcat-openbsd; then the shared libraries of dash, socat and nc, down to libc.
packages=(
	busybox-static dash socat netcat-openbsd
	libc6 libssl3 libwrap0 libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
	libcom-err2 libkrb5support0 libkeyutils1 libbsd0 libmd0
)

arch=$(dpkg --print-architecture)
dir="$CACHE_DIR/conformance-images/$arch"
root="$dir/root"
stamp="$root/.packages"
want=$(printf '%s\n' "${packages[@]}")
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
	echo "$root"
	exit 0
fi

debs="$dir/debs"
mkdir -p "$debs"
missing=()
for p in "${packages[@]}"; do
	compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	echo "conformance-debs.sh: downloading ${missing[*]} from Debian into $debs" >&2
	# apt-get download drops to the _apt user, which cannot write the cache: downloading as
	# the caller is what it warns about and then does anyway.
	download() { (cd "$debs" && apt-get -q -o APT::Sandbox::User="$(id -un)" download "${missing[@]}" >&2); }
	if ! download; then
		# A machine whose package lists are missing or stale: update them once and retry.
		echo "conformance-debs.sh: apt-get update, then downloading again" >&2
		sudo=()
		[[ $(id -u) == 0 ]] || sudo=(sudo)
		"${sudo[@]}" apt-get -q update >&2
		download
	fi
fi

rm -rf "$root"
mkdir -p "$root"
for p in "${packages[@]}"; do
	# One version of each: the newest name sorts last when several were downloaded over time.
	deb=$(compgen -G "$debs/${p}_*.deb" | sort -V | tail -n 1)
	dpkg-deb -x "$deb" "$root"
done
echo "$want" >"$stamp"
echo "$root"
