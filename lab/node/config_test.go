package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func validConfig() Config {
	return Config{
		Name: "aws-node-1", Netns: "semaphore-lab-aws-1", IP: "198.19.0.11",
		PodCIDR: "198.18.1.0/25", ClusterCIDR: "198.18.1.0/24", ClusterDNS: "10.101.0.10",
		ClusterDomain: "cluster.local", Kubeconfig: "/lab/kubelet.kubeconfig", ProxyKubeconfig: "/lab/kube-proxy.kubeconfig",
		Registry: "127.0.0.1:5000", SandboxImage: "127.0.0.1:5000/pause:1", Dir: "/lab/nodes/aws-node-1",
		LogDir: "/lab/logs", BinDir: "/cache/kube", PrivateDirs: []string{"/var/lib/semaphore-wireguard"},
	}
}

func TestValidate(t *testing.T) {
	if _, err := validConfig().validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Config){
		"no name":              func(c *Config) { c.Name = "" },
		"name with a slash":    func(c *Config) { c.Name = "a/b" },
		"IPv6 node IP":         func(c *Config) { c.IP = "fd00::1" },
		"pod CIDR not masked":  func(c *Config) { c.PodCIDR = "198.18.1.1/24" },
		"registry with a path": func(c *Config) { c.Registry = "127.0.0.1:5000/x" },
		"relative private dir": func(c *Config) { c.PrivateDirs = []string{"var/lib/x"} },
		"Dir in a private one": func(c *Config) { c.Dir = "/var/lib/kubelet/node" },
		"Dir in /run":          func(c *Config) { c.Dir = "/run/lab/node" },
	} {
		c := validConfig()
		change(&c)
		if _, err := c.validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The settings that a node on this kind of machine cannot do without (see the package
// documentation) are in what the components read.
func TestConfigs(t *testing.T) {
	cfg := validConfig()
	containerd := containerdConfig(cfg)
	for _, want := range []string{
		`sandbox_image = "127.0.0.1:5000/pause:1"`,
		"restrict_oom_score_adj = true",
		`snapshotter = "overlayfs"`,
		"SystemdCgroup = false",
		`bin_dir = "/opt/cni/bin"`,
		`config_path = "/lab/nodes/aws-node-1/config/certs.d"`,
	} {
		if !strings.Contains(containerd, want) {
			t.Errorf("containerd's configuration lacks %s:\n%s", want, containerd)
		}
	}
	if hosts := registryHosts(cfg.Registry); !strings.Contains(hosts, `server = "http://127.0.0.1:5000"`) ||
		!strings.Contains(hosts, `capabilities = ["pull", "resolve"]`) {
		t.Errorf("hosts.toml:\n%s", hosts)
	}

	data, err := kubeletConfig(cfg, 20000)
	if err != nil {
		t.Fatal(err)
	}
	var kubelet map[string]any
	if err := yaml.Unmarshal(data, &kubelet); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"failCgroupV1": false, "cgroupDriver": "cgroupfs", "cgroupRoot": "/semaphore-lab-aws-node-1",
		"failSwapOn": false, "address": "198.19.0.11", "readOnlyPort": float64(0),
		"healthzBindAddress": "127.0.0.1", "maxOpenFiles": float64(20000),
		"containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
		"resolvConf":               "/lab/nodes/aws-node-1/config/resolv.conf",
		// A Secret written again reaches the pods in seconds, not at the next minute's sync.
		"syncFrequency": "10s",
	} {
		if kubelet[key] != want {
			t.Errorf("kubelet %s = %v, want %v", key, kubelet[key], want)
		}
	}
	if data, _ := kubeletConfig(cfg, 1<<62); strings.Contains(string(data), "maxOpenFiles") {
		t.Error("maxOpenFiles set from a limit kubelet's default is below")
	}

	data, err = proxyConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var proxy struct {
		Mode        string                     `json:"mode"`
		ClusterCIDR string                     `json:"clusterCIDR"`
		Hostname    string                     `json:"hostnameOverride"`
		Conntrack   map[string]json.RawMessage `json:"conntrack"`
	}
	if err := yaml.Unmarshal(data, &proxy); err != nil {
		t.Fatal(err)
	}
	if proxy.Mode != "iptables" || proxy.ClusterCIDR != cfg.ClusterCIDR || proxy.Hostname != cfg.Name ||
		string(proxy.Conntrack["maxPerCore"]) != "0" || string(proxy.Conntrack["tcpEstablishedTimeout"]) != `"0s"` {
		t.Errorf("kube-proxy's configuration:\n%s", data)
	}

	data, err = cniConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"isGateway": true`, `"ipMasq": false`, `"hairpinMode": true`, `"subnet": "198.18.1.0/25"`, `"type": "portmap"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the CNI configuration lacks %s:\n%s", want, data)
		}
	}
}

// Images named on docker.io (the MCS conformance suite's pods run two) come from the lab's
// registry, which is docker.io's server as well as its mirror: no pull ever leaves the lab.
func TestDockerHubImagesComeFromTheLabRegistry(t *testing.T) {
	cfg := validConfig()
	cfg.Dir = t.TempDir()
	if err := writeConfigs(cfg, 0); err != nil {
		t.Fatal(err)
	}
	for _, registry := range []string{cfg.Registry, "docker.io"} {
		data, err := os.ReadFile(filepath.Join(cfg.Dir, "config", "certs.d", registry, "hosts.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if want := registryHosts(cfg.Registry); string(data) != want {
			t.Errorf("%s's hosts.toml:\n%s\nwant:\n%s", registry, data, want)
		}
	}
}
