// Package node runs one real Kubernetes node of the lab: containerd, kubelet and kube-proxy in
// an existing network namespace, on this machine, next to other such nodes and without touching
// the machine's own network.
//
// # What a node is
//
// The caller (the lab, or a test) makes the network: a named network namespace
// (/run/netns/<Netns>) whose link to the nodes' network is up with the node's address, the API server and
// an image registry forwarded into it on loopback. Start then runs, in that namespace:
//
//   - containerd with its CRI plugin (runc, overlayfs, CNI from /usr/lib/cni), pulling from
//     the plain-HTTP registry Config.Registry only;
//   - kubelet, registering as Config.Name with Config.IP as its InternalIP;
//   - kube-proxy in iptables mode.
//
// Pods get addresses from Config.PodCIDR on a CNI bridge (cni0: bridge with isGateway,
// no masquerade, hairpin mode, host-local IPAM, portmap). Routes to other nodes' pod ranges are
// the caller's business.
//
// # One machine, many nodes
//
// Every node has a mount namespace of its own: containerd is started through
//
//	unshare -m --propagation slave nsenter --net=/run/netns/<Netns> sh -c '<mounts>; exec containerd'
//
// and there the node gets a /run of its own (a tmpfs), and per-node directories
// (Dir/root/<path>) are bind-mounted over the paths the components use by default, several of
// them fixed in their code (kubelet's device-plugin socket in /var/lib/kubelet,
// /var/log/containers, the CNI cache in /var/lib/cni, the shims' sockets in /run/containerd):
// /run/containerd, /run/netns, /var/lib/containerd, /var/lib/kubelet, /var/lib/cni,
// /var/log/pods, /var/log/containers, /etc/cni/net.d, /opt/containerd, and
// Config.PrivateDirs. kubelet and kube-proxy join containerd's mount namespace (nsenter
// --mount=/proc/<containerd>/ns/mnt --net=/run/netns/<Netns>): kubelet mounts volumes that
// runc, under containerd, bind-mounts into containers, so the two must see the same mounts.
// Mounts made in a node never propagate back to the machine (slave propagation), and vanish with
// the node's last process.
//
// A bind mount needs its mount point to exist: outside /run, Start creates the missing ones on
// the machine (empty directories, marked with the extended attribute
// trusted.semaphore-lab.mountpoint), and Stop and Cleanup remove the marked ones again once no
// node runs on the machine any more (never while one does: removing a directory that is a mount
// point in another mount namespace unmounts it there). An flock on the first cgroup
// hierarchy's directory keeps a node's start and another's removal of mount points apart.
//
// Every process of the node is in the cgroup /semaphore-lab-<Name> (in every cgroup v1
// hierarchy; cpuset.cpus and cpuset.mems copied from the parent): containerd, kubelet and
// kube-proxy in its child "daemons" (joined before they exec, by the shell that starts them),
// containerd's shims with containerd, and the pods under "kubepods", because it is kubelet's
// cgroupRoot. Stop and Cleanup freeze that tree (v1 freezer), SIGKILL every process in it, thaw
// it, and remove the cgroups bottom-up, in every hierarchy (runc also makes the containers'
// cgroups in the cgroup v2 hierarchy of a hybrid machine, /sys/fs/cgroup/unified): nothing of a
// node survives, shims and containers included. The daemons die with the process that started
// them (PR_SET_PDEATHSIG), but the shims and the containers outlive it, reparented to init:
// after a crash, Cleanup kills them (`lab down`). Both return once every process they killed has
// exited (a process leaves its cgroup before it has finished exiting); a shim or container may
// be a zombie for a moment after that, until init reaps it.
//
// # Settings that matter (found the hard way)
//
//   - This machine's capability bounding set lacks CAP_SYS_RESOURCE: runc cannot lower
//     oom_score_adj, and without containerd's restrict_oom_score_adj every sandbox fails with
//     "runc create failed: ... can't get final child's PID from pipe: EOF" (the real cause,
//     "nsexec: failed to update /proc/self/oom_score_adj: Permission denied", shows only with
//     runc --debug). kubelet cannot lower its own either ("Failed to ApplyOOMScoreAdj"), nor
//     raise its open-files limit to its default maxOpenFiles (1000000): maxOpenFiles is set to
//     the hard limit kubelet inherits when that is lower. Both are harmless, as is "Failed to
//     ensure process in container with oom score ... failed to find pid namespace of init
//     process" (kubelet cannot read /proc/1/ns/pid here).
//   - Not `ip netns exec`: it remounts /sys, which hides the cgroup v1 mounts from kubelet and
//     runc ("failed to get mounted cgroup subsystems: failed to find cgroup mounts").
//   - cgroup v1: kubelet 1.36 refuses it unless failCgroupV1 is false; cgroupDriver cgroupfs
//     (containerd's runc options SystemdCgroup = false). cgroup v2 is not supported here yet.
//   - kubelet 1.36 asks the runtime for its cgroup driver; containerd 1.6 does not implement
//     that call ("RuntimeConfig from runtime service failed ... Unimplemented") and kubelet falls
//     back to its own setting. kubelet 1.37 drops the fallback: it needs containerd 2.
//   - kubelet sets machine-wide sysctls (vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
//     kernel.panic_on_oops, kernel.keys.root_maxkeys, kernel.keys.root_maxbytes) when they
//     differ from what it wants; there is no setting to stop that short of refusing to start
//     (protectKernelDefaults). SaveSysctls records them before the first node starts,
//     RestoreSysctls puts them back, also after a crash (the record is a file).
//   - The disk is the machine's: evictionHard and image garbage collection are relaxed so
//     that a full disk elsewhere does not evict the lab's pods or delete its images. Dir must be
//     on a file system overlayfs takes as an upper directory (ext4, xfs, tmpfs; not overlayfs).
//   - kube-proxy cannot set the conntrack sysctls here: conntrack {maxPerCore: 0, min: 0,
//     tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s} leaves them alone. Its NodePorts are
//     on the node's address only (nodePortAddresses: primary): the default includes loopback,
//     for which it sets route_localnet and warns.
//   - There is no DNS server upstream of the lab: kubelet's resolvConf is a file of the node's
//     with no nameserver, so pods with dnsPolicy Default get none instead of this machine's
//     (which is outside), and ClusterFirst pods get clusterDNS only.
//   - kubelet's flexvolume directory defaults to /usr/libexec/kubernetes/...: it is moved into
//     the node's /var/lib/kubelet so that kubelet creates nothing on the machine. mount(8)
//     writes /run/mount: the node's own /run keeps that, and anything else, off the machine.
//   - The sandbox (pause) image is pulled by containerd, not kubelet, through the same
//     hosts.toml as every image: it must be in Config.Registry.
//   - bridge-nf-call-iptables is per network namespace and 1 in a new one: nothing to set.
//     net.ipv4.ip_forward is per namespace too, and Start sets it in the node's.
//   - iptables here is the nft backend, which takes no /run/xtables.lock.
//
// # Costs and timing
//
// Measured on 2 busy cores (TestNode, go test -v): Start returns about 2 s after it is called,
// the Node is Ready then or within a second, a pod (image pulled from the local registry) runs
// 1–2 s after it is created, kube-proxy programs a Service within a second or two, and Stop
// takes 0.1–0.5 s. Idle with one pod, a node uses about 1.5% of one core, and its processes have
// about 200 MiB resident (kubelet 78, kube-proxy 57, containerd 45, the pod's shim 13, pause
// 2×1.5), of which about 47 MiB is anonymous memory (the rest is the binaries, shared by
// nodes).
//
// TestNode needs root (it skips otherwise), cgroup v1, ci/node-packages.sh and ci/kube-binaries.sh
// all; it runs in network and mount namespaces of its own, so that only the node's cgroups and
// the sysctls are the machine's, and takes about 15 s.
package node

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Config is one node.
type Config struct {
	// Name is the Node's name (kubelet --hostname-override), e.g. "aws-node-1". It also names
	// the node's cgroup, /semaphore-lab-<Name>.
	Name string
	// Netns is an existing named network namespace (/run/netns/<Netns>) whose link to the nodes' network is
	// up with IP.
	Netns string
	// IP is the node's address on the nodes' network (its InternalIP): kubelet's --node-ip, where kubelet serves (10250).
	IP string
	// ExternalCloudProvider runs kubelet with --cloud-provider=external: the Node's addresses
	// are set by someone else (a cloud controller manager, the lab), and kubelet keeps them.
	ExternalCloudProvider bool
	// PodCIDR is this node's pod range, where CNI (host-local) takes pod addresses from. The
	// caller sets the Node's spec.podCIDR to the same (no controller allocates it). A Calico
	// node with calico-ipam needs none: its IPAM blocks say where its pods' addresses are.
	PodCIDR string
	// ClusterCIDR is the cluster's pod range (kube-proxy's clusterCIDR: traffic from outside it
	// to a Service is masqueraded).
	ClusterCIDR string
	// ClusterDNS is the cluster's DNS Service IP, ClusterDomain its domain ("cluster.local").
	ClusterDNS    string
	ClusterDomain string
	// Kubeconfig is kubelet's credentials (system:node:<Name> in system:nodes, for the Node
	// authorizer); ProxyKubeconfig kube-proxy's (system:kube-proxy). Their server must be
	// reachable from inside Netns.
	Kubeconfig      string
	ProxyKubeconfig string
	// ClientCAFile, when set, is the CA whose client certificates kubelet accepts (its
	// authentication.x509.clientCAFile): the API server's, for logs, exec and port-forward.
	// Without it kubelet authenticates bearer tokens only.
	ClientCAFile string
	// Registry is "host:port" of a plain-HTTP registry reachable from inside Netns at that
	// address (e.g. 127.0.0.1:PORT, forwarded by the caller); containerd pulls from it over
	// HTTP. Images from elsewhere cannot be pulled: the lab has no way out.
	Registry string
	// SandboxImage is the pause image (containerd's sandbox_image), in Registry.
	SandboxImage string
	// Dir is this node's state: configuration, and the directories bind-mounted in the node
	// (Dir/root/<path>). Stop removes it.
	Dir string
	// LogDir receives containerd-<Name>.log, kubelet-<Name>.log and kube-proxy-<Name>.log.
	LogDir string
	// BinDir holds kubelet and kube-proxy. containerd, runc, the CNI plugins (/usr/lib/cni),
	// iptables, unshare and nsenter come from the machine (ci/node-packages.sh).
	BinDir string
	// PrivateDirs are more absolute directories the node has to itself, like those above: a
	// hostPath of a pod that must differ between nodes of one machine. The node sees
	// Dir/root/<path> there.
	PrivateDirs []string
	// Calico, when set, makes the node a Calico node (calico.go): its pods' networking is
	// Calico's, and so are their addresses but with Calico.HostLocal (PodCIDR's then).
	Calico *Calico
}

// privatePaths are the directories every node has to itself (see the package documentation).
// Those under /run are made in the node's own /run, a tmpfs; the others need a mount point on
// this machine.
var privatePaths = []string{
	"/run/containerd",
	"/run/netns",
	"/var/lib/containerd",
	"/var/lib/kubelet",
	"/var/lib/cni",
	"/var/log/pods",
	"/var/log/containers",
	"/etc/cni/net.d",
	"/opt/containerd",
	cniPluginDir,
}

// underRun reports whether path is in /run (/var/run is a link to it), which every node has
// to itself.
func underRun(path string) bool { return within(path, "/run") || within(path, "/var/run") }

// machineMountpoints are those of targets that need a mount point on this machine.
func machineMountpoints(targets []string) []string {
	var out []string
	for _, t := range targets {
		if !underRun(t) {
			out = append(out, t)
		}
	}
	return out
}

// cgroupPrefix starts the name of every node's cgroup, at the root of each hierarchy.
const cgroupPrefix = "semaphore-lab-"

// CgroupRoot is the cgroup of node name (kubelet's cgroupRoot), in every hierarchy.
func CgroupRoot(name string) string { return "/" + cgroupPrefix + name }

// validate checks cfg and returns it cleaned.
func (cfg Config) validate() (Config, error) {
	errs := cfg.fieldErrors()
	cfg, pathErrs := cfg.cleanPaths()
	return cfg, errors.Join(append(errs, pathErrs...)...)
}

// fieldErrors are what is wrong with cfg's fields one by one: unset, or not a name, an
// address or a network.
func (cfg Config) fieldErrors() []error {
	var errs []error
	need := func(field, value string) {
		if value == "" {
			errs = append(errs, fmt.Errorf("%s is not set", field))
		}
	}
	need("Name", cfg.Name)
	need("Netns", cfg.Netns)
	need("Kubeconfig", cfg.Kubeconfig)
	need("ProxyKubeconfig", cfg.ProxyKubeconfig)
	need("Registry", cfg.Registry)
	need("SandboxImage", cfg.SandboxImage)
	need("Dir", cfg.Dir)
	need("LogDir", cfg.LogDir)
	need("BinDir", cfg.BinDir)
	need("ClusterDomain", cfg.ClusterDomain)
	if strings.ContainsAny(cfg.Name, "/ \t\n") || cfg.Name == "." || cfg.Name == ".." {
		errs = append(errs, fmt.Errorf("node name %q cannot name a cgroup", cfg.Name))
	}
	if strings.ContainsAny(cfg.Netns, "/ \t\n") {
		errs = append(errs, fmt.Errorf("network namespace %q is not a name", cfg.Netns))
	}
	for field, v := range map[string]string{"IP": cfg.IP, "ClusterDNS": cfg.ClusterDNS} {
		if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("%s %q is not an IPv4 address", field, v))
		}
	}
	networks := map[string]string{"ClusterCIDR": cfg.ClusterCIDR}
	if cfg.Calico == nil || cfg.Calico.HostLocal {
		networks["PodCIDR"] = cfg.PodCIDR
	}
	if cfg.Calico != nil {
		errs = append(errs, cfg.validateCalico()...)
	}
	for field, v := range networks {
		if p, err := netip.ParsePrefix(v); err != nil || !p.Addr().Is4() || p.Masked() != p {
			errs = append(errs, fmt.Errorf("%s %q is not an IPv4 network", field, v))
		}
	}
	if strings.ContainsAny(cfg.Registry, "/ \t\n") {
		errs = append(errs, fmt.Errorf("registry %q is not host:port", cfg.Registry))
	}
	return errs
}

// cleanPaths makes cfg's paths absolute and clean, and says which cannot be, or lie in one of
// the node's private directories.
func (cfg Config) cleanPaths() (Config, []error) {
	var errs []error
	abs := func(field string, p *string) {
		if *p == "" {
			return
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
		*p = a
	}
	abs("Dir", &cfg.Dir)
	abs("LogDir", &cfg.LogDir)
	abs("BinDir", &cfg.BinDir)
	abs("Kubeconfig", &cfg.Kubeconfig)
	abs("ProxyKubeconfig", &cfg.ProxyKubeconfig)
	cfg.PrivateDirs = append([]string(nil), cfg.PrivateDirs...)
	for i, p := range cfg.PrivateDirs {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
			errs = append(errs, fmt.Errorf("PrivateDirs: %q is not an absolute directory below /", p))
		}
		cfg.PrivateDirs[i] = filepath.Clean(p)
	}
	// What the node reads from the machine must not be hidden by its own private directories.
	for _, private := range append(cfg.mountTargets(), "/run", "/var/run") {
		for field, p := range map[string]string{"Dir": cfg.Dir, "BinDir": cfg.BinDir, "Kubeconfig": cfg.Kubeconfig, "ProxyKubeconfig": cfg.ProxyKubeconfig} {
			if p != "" && within(p, private) {
				errs = append(errs, fmt.Errorf("%s %s is inside %s, which the node has to itself", field, p, private))
			}
		}
	}
	return cfg, errs
}

// mountTargets are the directories bind-mounted in the node.
func (cfg Config) mountTargets() []string {
	out := append(append([]string(nil), privatePaths...), cfg.PrivateDirs...)
	if cfg.Calico != nil {
		out = append(out, calicoPaths...)
	}
	return out
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
