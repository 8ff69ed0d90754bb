# Sourced by the ci/ scripts that install Debian packages. apt_install_quietly installs packages
# with apt-get without letting their init scripts start a service on the machine: the lab runs
# its own containerd per node, and promtool is wanted without a Prometheus server. A policy-rc.d
# that refuses every start is in place for the install (the one already there, if any, is put
# back); callers still stop what a systemd postinst started anyway, which may bypass policy-rc.d.
# Needs root or sudo; progress goes to stderr. It sets the array sudo, which callers put before
# the commands they run as root afterwards.

# apt_install_quietly caller package...
apt_install_quietly() {
	local caller=$1
	shift
	if ! command -v apt-get >/dev/null; then
		echo "$caller: $* missing, and there is no apt-get to install them with" >&2
		return 1
	fi
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if ! command -v sudo >/dev/null; then
			echo "$caller: installing $* needs root (or sudo)" >&2
			return 1
		fi
		sudo=(sudo)
	fi
	echo "$caller: installing $*" >&2
	local policy=/usr/sbin/policy-rc.d backup=""
	if [[ -e $policy ]]; then
		backup=$(mktemp)
		"${sudo[@]}" cp -p "$policy" "$backup"
	fi
	# Exit status 101: "action forbidden by policy" (invoke-rc.d(8)).
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 0755 "$policy"
	local status=0
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >&2 &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 ||
		status=$?
	if [[ -n $backup ]]; then
		"${sudo[@]}" cp -p "$backup" "$policy"
		rm -f "$backup"
	else
		"${sudo[@]}" rm -f "$policy"
	fi
	return "$status"
}
