package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// Calico makes a node a Calico node, as calico-node's DaemonSet makes one: before kubelet
// starts, `calico-node -startup` registers the node in Calico's datastore (the Kubernetes API,
// through Calico's own CRDs), then Felix (`calico-node -felix`) programs the node's iptables
// (the nft backend, as kube-proxy's) and routes, and `calico-node -allocate-tunnel-addrs` gives
// the node its VXLAN tunnel address; pods get their interfaces from Calico's CNI plugin and
// their addresses from calico-ipam, in blocks of the cluster's IP pools, routed between the
// nodes over VXLAN (or, HostLocal, from the Node's pod CIDR). What the DaemonSet's containers would have to themselves is the node's own
// here: /var/lib/calico, /var/log/calico, the CNI plugins' directory /opt/cni/bin, and /run.
//
// Settings that matter here (found by running it on these machines): Felix phones home unless
// usage reporting is off; this kernel has no IPIP and no WireGuard module (VXLAN it has); BPF
// objects are machine-wide, unlike everything else Felix touches, so nothing BPF is enabled.
// In its iptables mode Felix still tries, at start, to remove a BPF connect-time load balancer
// from the machine's root cgroup: it needs bpftool for that, which these machines do not have,
// and logs that it could not (harmless; the lab's teardown checks /sys/fs/bpf).
type Calico struct {
	// BinDir holds calico-node and calico, the CNI plugin, which is calico-ipam when called by
	// that name (ci/calico.sh builds them).
	BinDir string
	// Kubeconfig is calico-node's credentials (ServiceAccount kube-system/calico-node, bound
	// to Calico's ClusterRole), CNIKubeconfig the CNI plugin's (calico-cni-plugin).
	Kubeconfig, CNIKubeconfig string
	// MTU is the pods' interfaces' MTU: the node network's less VXLAN's 50 bytes.
	MTU int
	// Uplink is the node's link to its network, whose MTU Felix reads (the host MTU it
	// publishes for the CNI plugin).
	Uplink string
	// HostLocal makes the node's pods take their addresses from the Node's pod CIDR
	// (Config.PodCIDR, host-local IPAM), as on a provider that allocates them and routes
	// them (GKE's VPC-native clusters): Calico then enforces policy only, and the routes
	// between nodes are the provider's. Otherwise calico-ipam hands out the addresses, in
	// blocks the node claims, routed between the nodes over VXLAN.
	HostLocal bool
	// IPv4Pools are the pools (by name) calico-ipam takes a pod's address from unless the pod
	// or its namespace names others (annotation cni.projectcalico.org/ipv4pools).
	IPv4Pools []string
}

// backend is calico-node's networking backend: VXLAN between nodes when calico-ipam hands
// out the addresses, none (policy only) otherwise.
func (c *Calico) backend() string {
	if c.HostLocal {
		return "none"
	}
	return "vxlan"
}

// ipam is the CNI plugin's IPAM section.
func (c *Calico) ipam() map[string]any {
	if c.HostLocal {
		return map[string]any{"type": "host-local", "subnet": "usePodCidr"}
	}
	return map[string]any{"type": "calico-ipam", "ipv4_pools": c.IPv4Pools}
}

// calicoPaths are the directories a Calico node has to itself, besides privatePaths.
var calicoPaths = []string{"/var/lib/calico", "/var/log/calico"}

// cniPluginDir is where containerd finds the CNI plugins: a node's own directory of links to
// the machine's plugins (ci/node-packages.sh) and, on a Calico node, to Calico's.
const cniPluginDir = "/opt/cni/bin"

// machinePlugins are the machine's CNI plugins a node links in.
var machinePlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// linkCNIPlugins fills the node's plugin directory.
func linkCNIPlugins(cfg Config) error {
	dir := paths{cfg.Dir}.root(cniPluginDir)
	links := map[string]string{}
	for _, p := range machinePlugins {
		links[p] = filepath.Join(cniBinDir, p)
	}
	if cfg.Calico != nil {
		links["calico"] = filepath.Join(cfg.Calico.BinDir, "calico")
		links["calico-ipam"] = filepath.Join(cfg.Calico.BinDir, "calico")
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// calicoCNIConfig is a Calico node's CNI network, as Calico's manifests install it: the
// calico plugin with calico-ipam and Kubernetes policy, and portmap.
func calicoCNIConfig(cfg Config) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"name":       "k8s-pod-network",
		"cniVersion": "0.3.1",
		"plugins": []any{
			map[string]any{
				"type":           "calico",
				"log_level":      "info",
				"log_file_path":  "/var/log/calico/cni/cni.log",
				"datastore_type": "kubernetes",
				"nodename":       cfg.Name,
				"mtu":            cfg.Calico.MTU,
				"ipam":           cfg.Calico.ipam(),
				"policy":         map[string]string{"type": "k8s"},
				"kubernetes":     map[string]string{"kubeconfig": cfg.Calico.CNIKubeconfig},
			},
			map[string]any{"type": "portmap", "snat": true, "capabilities": map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
}

// calicoEnv is the environment of calico-node's programs on the node: what calico-node's
// DaemonSet sets (VXLAN networking, the Kubernetes datastore, no default pool: the lab makes
// the pools), and Felix's settings for this machine.
func calicoEnv(cfg Config) []string {
	return []string{
		"DATASTORE_TYPE=kubernetes",
		"KUBECONFIG=" + cfg.Calico.Kubeconfig,
		"NODENAME=" + cfg.Name,
		"CALICO_NETWORKING_BACKEND=" + cfg.Calico.backend(),
		"CLUSTER_TYPE=k8s,kdd",
		"IP=" + cfg.IP,
		"NO_DEFAULT_POOLS=true",
		"WAIT_FOR_DATASTORE=true",
		"CALICO_DISABLE_FILE_LOGGING=true",
		"CALICO_MANAGE_CNI=false",
		"FELIX_DATASTORETYPE=kubernetes",
		"FELIX_FELIXHOSTNAME=" + cfg.Name,
		"FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT",
		"FELIX_IPV6SUPPORT=false",
		"FELIX_HEALTHENABLED=true",
		"FELIX_HEALTHHOST=127.0.0.1",
		"FELIX_PROMETHEUSMETRICSENABLED=true",
		"FELIX_LOGSEVERITYSCREEN=info",
		"FELIX_LOGFILEPATH=none",
		"FELIX_LOGSEVERITYSYS=none",
		"FELIX_USAGEREPORTINGENABLED=false",
		"FELIX_IPTABLESBACKEND=NFT",
		"FELIX_BPFENABLED=false",
		"FELIX_XDPENABLED=false",
		"FELIX_VXLANMTU=" + strconv.Itoa(cfg.Calico.MTU),
		"FELIX_MTUIFACEPATTERN=^" + regexp.QuoteMeta(cfg.Calico.Uplink) + "$",
	}
}

// felixHealth is where Felix answers whether it is live, on the node's loopback.
const felixHealth = "http://127.0.0.1:9099/liveness"

// calicoCommand is calico-node with flag, in the node's namespaces (enter) and environment.
func calicoCommand(cfg Config, enter []string, flag string) []string {
	args := append(append([]string(nil), enter...), "env")
	args = append(args, calicoEnv(cfg)...)
	return append(args, filepath.Join(cfg.Calico.BinDir, "calico-node"), flag)
}

// validateCalico says what is wrong with cfg.Calico.
func (cfg Config) validateCalico() []error {
	c := cfg.Calico
	var errs []error
	if c.BinDir == "" || c.Kubeconfig == "" || c.CNIKubeconfig == "" || c.Uplink == "" {
		errs = append(errs, fmt.Errorf("Calico needs BinDir, Kubeconfig, CNIKubeconfig and Uplink"))
	}
	if c.MTU < 1280 || c.MTU > 9000 {
		errs = append(errs, fmt.Errorf("Calico MTU %d is not between 1280 and 9000", c.MTU))
	}
	return errs
}
