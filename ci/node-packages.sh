#!/usr/bin/env bash
# Installs what the lab's real nodes (lab/node) run besides kubelet and kube-proxy (which
# ci/kube-binaries.sh all builds): containerd, runc, the CNI plugins (in /usr/lib/cni),
# iptables, conntrack, and unshare/nsenter/mount (util-linux) and ip (iproute2). Debian's
# packages, with apt-get, only when something is missing; that needs root (or sudo). Progress
# goes to stderr; stdout stays empty.
#
# Debian 12: containerd 1.6.20, runc 1.1.5, containernetworking-plugins 1.1.1, iptables 1.8.9
# (nft backend). The package's init scripts must not start a containerd of the machine (the
# lab runs one per node): a policy-rc.d that refuses every start is in place for the install,
# and the service is stopped afterwards should it run anyway (systemd postinst scripts may
# bypass policy-rc.d).
set -euo pipefail

missing=()
need_cmd() { # command package
	command -v "$1" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}
need_cmd containerd containerd
need_cmd containerd-shim-runc-v2 containerd
need_cmd runc runc
need_cmd iptables iptables
need_cmd iptables-restore iptables
need_cmd conntrack conntrack
need_cmd unshare util-linux
need_cmd nsenter util-linux
need_cmd mount mount
need_cmd ip iproute2
for plugin in bridge host-local portmap loopback; do
	[[ -x /usr/lib/cni/$plugin ]] || missing+=(containernetworking-plugins)
done
if [[ ${#missing[@]} == 0 ]]; then
	exit 0
fi
mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)

if ! command -v apt-get >/dev/null; then
	echo "node-packages.sh: missing ${packages[*]}, and there is no apt-get to install them with" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "node-packages.sh: missing ${packages[*]}; installing them needs root (or sudo)" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "node-packages.sh: installing ${packages[*]}" >&2
policy=/usr/sbin/policy-rc.d
policy_backup=""
if [[ -e $policy ]]; then
	policy_backup=$(mktemp)
	"${sudo[@]}" cp -p "$policy" "$policy_backup"
fi
restore_policy() {
	if [[ -n $policy_backup ]]; then
		"${sudo[@]}" cp -p "$policy_backup" "$policy"
		rm -f "$policy_backup"
	else
		"${sudo[@]}" rm -f "$policy"
	fi
}
trap restore_policy EXIT
# Exit status 101: "action forbidden by policy" (invoke-rc.d(8)).
printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
"${sudo[@]}" chmod 0755 "$policy"

"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}" >&2

# Belt and braces: no containerd of the machine behind the caller's back.
if [[ " ${packages[*]} " == *" containerd "* ]] && command -v systemctl >/dev/null &&
	systemctl is-active --quiet containerd 2>/dev/null; then
	echo "node-packages.sh: stopping and disabling the containerd service the package started" >&2
	"${sudo[@]}" systemctl disable --now containerd >&2 || true
fi

for plugin in bridge host-local portmap loopback; do
	[[ -x /usr/lib/cni/$plugin ]] || { echo "node-packages.sh: /usr/lib/cni/$plugin is still missing" >&2; exit 1; }
done
