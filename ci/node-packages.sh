#!/usr/bin/env bash
# Installs what the lab's real nodes (lab/node) run besides kubelet and kube-proxy (which
# ci/kube-binaries.sh all builds): containerd, runc, the CNI plugins (in /usr/lib/cni),
# iptables, conntrack, ipset (for Felix), and unshare/nsenter/mount (util-linux) and ip (iproute2). Debian's
# packages, with apt-get, only when something is missing; that needs root (or sudo). Progress
# goes to stderr; stdout stays empty.
#
# Debian 12: containerd 1.6.20, runc 1.1.5, containernetworking-plugins 1.1.1, iptables 1.8.9
# (nft backend). The package must not leave a containerd of the machine running (the lab runs
# one per node): ci/apt-install.sh starts no service, and one started anyway is stopped after.
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
# Felix (Calico) programs the nodes' IP sets with it.
need_cmd ipset ipset
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

. "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
apt_install_quietly node-packages.sh "${packages[@]}"

# Belt and braces: no containerd of the machine behind the caller's back.
if [[ " ${packages[*]} " == *" containerd "* ]] && command -v systemctl >/dev/null &&
	systemctl is-active --quiet containerd 2>/dev/null; then
	echo "node-packages.sh: stopping and disabling the containerd service the package started" >&2
	"${sudo[@]}" systemctl disable --now containerd >&2 || true
fi

for plugin in bridge host-local portmap loopback; do
	[[ -x /usr/lib/cni/$plugin ]] || { echo "node-packages.sh: /usr/lib/cni/$plugin is still missing" >&2; exit 1; }
done
