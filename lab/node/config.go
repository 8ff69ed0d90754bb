package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Where a node's processes find things, as they see them inside the node (the defaults, which
// the bind mounts make the node's own).
const (
	containerdSocket = "/run/containerd/containerd.sock"
	// kubeletHealthz and proxyHealthz are on the node's loopback: each node has its own.
	kubeletHealthz = "127.0.0.1:10248"
	proxyHealthz   = "127.0.0.1:10256"
	proxyMetrics   = "127.0.0.1:10249"
	cniBinDir      = "/usr/lib/cni"
	cniConfDir     = "/etc/cni/net.d"
	// cniBridge is the bridge the node's pods hang off, with the first address of PodCIDR.
	cniBridge = "cni0"
)

// paths of one node's files on this machine.
type paths struct {
	dir string
}

func (p paths) config(name string) string { return filepath.Join(p.dir, "config", name) }

// root is where the node's private directory target lives on this machine.
func (p paths) root(target string) string { return filepath.Join(p.dir, "root", target) }

// containerdSocket is containerd's socket as this machine sees it.
func (p paths) containerdSocket() string { return p.root(containerdSocket) }

// writeConfigs writes every configuration file of the node under Dir, and creates the
// directories bind-mounted in the node. maxOpenFiles is the hard limit of open files kubelet
// can have (it sets its limit to its maxOpenFiles, 1000000 by default, which it cannot raise
// to without CAP_SYS_RESOURCE).
func writeConfigs(cfg Config, maxOpenFiles uint64) error {
	p := paths{cfg.Dir}
	for _, t := range cfg.mountTargets() {
		if err := os.MkdirAll(p.root(t), 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(p.config(""), 0o755); err != nil {
		return err
	}
	kubelet, err := kubeletConfig(cfg, maxOpenFiles)
	if err != nil {
		return err
	}
	proxy, err := proxyConfig(cfg)
	if err != nil {
		return err
	}
	if err := linkCNIPlugins(cfg); err != nil {
		return err
	}
	cni, err := cniConfig(cfg)
	if cfg.Calico != nil {
		cni, err = calicoCNIConfig(cfg)
	}
	if err != nil {
		return err
	}
	files := map[string][]byte{
		p.config("containerd.toml"):             []byte(containerdConfig(cfg)),
		p.config("kubelet.yaml"):                kubelet,
		p.config("kube-proxy.yaml"):             proxy,
		p.config("resolv.conf"):                 []byte(resolvConf),
		p.root(cniConfDir) + "/10-lab.conflist": cni,
	}
	for _, registry := range append([]string{cfg.Registry}, mirroredRegistries...) {
		hostsDir := p.config(filepath.Join("certs.d", registry))
		if err := os.MkdirAll(hostsDir, 0o755); err != nil {
			return err
		}
		files[filepath.Join(hostsDir, "hosts.toml")] = []byte(registryHosts(cfg.Registry))
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// mirroredRegistries are the registries whose images a node pulls from Config.Registry
// instead, under the same repository and tag: docker.io, for the two public images that the
// MCS conformance suite's pods run (alpine/socat, nicolaka/netshoot; lab/conformance pushes
// stand-ins under their names). Config.Registry is their server too, so nothing is ever
// pulled from outside.
var mirroredRegistries = []string{"docker.io"}

// resolvConf is kubelet's "host" resolv.conf: no nameserver (the lab has no DNS upstream),
// rather than this machine's, which names a server outside.
const resolvConf = "# A lab node: no DNS server but the cluster's (kubelet's clusterDNS).\n"

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // JSON strings are TOML basic strings, for what we quote
	return string(b)
}

// containerdConfig is containerd's configuration: the CRI plugin with runc (cgroupfs), overlayfs,
// the node's CNI configuration, the registry's hosts.toml, at the default paths (private to the
// node through its bind mounts).
func containerdConfig(cfg Config) string {
	p := paths{cfg.Dir}
	return fmt.Sprintf(`# containerd of lab node %[1]s (written by lab/node)
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
# Plugins this machine cannot use anyway: fewer errors in the log.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %[2]s

[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/containerd"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[3]s
  # runc cannot lower oom_score_adj without CAP_SYS_RESOURCE, which this machine withholds.
  restrict_oom_score_adj = true
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[4]s
    conf_dir = %[5]s

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[6]s
`, cfg.Name, tomlString(containerdSocket), tomlString(cfg.SandboxImage), tomlString(cniPluginDir),
		tomlString(cniConfDir), tomlString(p.config("certs.d")))
}

// registryHosts is containerd's hosts.toml for the plain-HTTP registry at hostPort: the lab
// registry's own, and that of each mirrored registry, whose server it replaces.
func registryHosts(hostPort string) string {
	server := tomlString("http://" + hostPort)
	return fmt.Sprintf("server = %s\n\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", server, server)
}

// kubeletConfig is kubelet's KubeletConfiguration.
func kubeletConfig(cfg Config, maxOpenFiles uint64) ([]byte, error) {
	p := paths{cfg.Dir}
	c := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// This machine has cgroup v1, which kubelet 1.36 refuses unless told otherwise.
		"failCgroupV1": false,
		"cgroupDriver": "cgroupfs",
		"cgroupRoot":   CgroupRoot(cfg.Name),
		"failSwapOn":   false,
		// Through the node's /run/containerd.
		"containerRuntimeEndpoint": "unix://" + containerdSocket,
		"address":                  cfg.IP,
		"port":                     10250,
		"readOnlyPort":             0,
		"healthzBindAddress":       strings.Split(kubeletHealthz, ":")[0],
		"healthzPort":              mustPort(kubeletHealthz),
		"clusterDNS":               []string{cfg.ClusterDNS},
		"clusterDomain":            cfg.ClusterDomain,
		"resolvConf":               p.config("resolv.conf"),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
		},
		"authorization": map[string]any{"mode": "Webhook"},
		// The disk is this machine's, shared with everything else: evict only when it is
		// really full, and never collect images (they come from the lab's registry).
		"evictionHard": map[string]string{
			"memory.available":  "100Mi",
			"nodefs.available":  "1%",
			"nodefs.inodesFree": "1%",
			"imagefs.available": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		// Flexvolume's default directory is /usr/libexec/kubernetes/...: keep it in the node.
		"volumePluginDir": "/var/lib/kubelet/volume-plugins",
		// No static pods, no graceful node shutdown (which would talk to systemd-logind).
		"staticPodPath":       "",
		"shutdownGracePeriod": "0s",
		// Pods are synced every 10 s, not every minute, so a Secret written again (a remote's
		// token, after link) reaches the pods' volumes in seconds: that wait is the kubelet's,
		// not Semaphore's, and docs/operations.md gives real clusters' figure.
		"syncFrequency": "10s",
	}
	if cfg.ClientCAFile != "" {
		c["authentication"].(map[string]any)["x509"] = map[string]any{"clientCAFile": cfg.ClientCAFile}
	}
	if maxOpenFiles > 0 && maxOpenFiles < 1000000 {
		c["maxOpenFiles"] = maxOpenFiles
	}
	return yaml.Marshal(c)
}

// proxyConfig is kube-proxy's KubeProxyConfiguration.
func proxyConfig(cfg Config) ([]byte, error) {
	return yaml.Marshal(map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clusterCIDR":        cfg.ClusterCIDR,
		"hostnameOverride":   cfg.Name,
		"healthzBindAddress": proxyHealthz,
		"metricsBindAddress": proxyMetrics,
		"clientConnection":   map[string]any{"kubeconfig": cfg.ProxyKubeconfig},
		// NodePorts on the node's address only (the default, every address, includes
		// loopback, for which kube-proxy sets route_localnet).
		"nodePortAddresses": []string{"primary"},
		// The conntrack sysctls cannot be set here (and are the machine's): leave them alone.
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	})
}

// cniConfig is the node's CNI network without Calico: a bridge whose address is the gateway of
// the pods, host-local addresses from PodCIDR, and portmap for hostPorts.
func cniConfig(cfg Config) ([]byte, error) {
	podRange := map[string]string{"subnet": cfg.PodCIDR}
	return json.MarshalIndent(map[string]any{
		"cniVersion": "0.4.0",
		"name":       "lab",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      cniBridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{podRange}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}, "", "  ")
}

func mustPort(hostPort string) int {
	i := strings.LastIndexByte(hostPort, ':')
	n, err := strconv.Atoi(hostPort[i+1:])
	if err != nil {
		panic(err)
	}
	return n
}
