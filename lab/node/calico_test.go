package node

import (
	"encoding/json"
	"slices"
	"testing"
)

// A Calico node's CNI network is Calico's plugin: with calico-ipam and its default pools, or
// with host-local on the Node's pod CIDR; and calico-node runs the backend that goes with it.
func TestCalicoNodeIPAMAndBackend(t *testing.T) {
	for _, tc := range []struct {
		hostLocal bool
		ipam      string
		backend   string
	}{{false, "calico-ipam", "CALICO_NETWORKING_BACKEND=vxlan"}, {true, "host-local", "CALICO_NETWORKING_BACKEND=none"}} {
		cfg := validConfig()
		cfg.Calico = &Calico{BinDir: "/calico", Kubeconfig: "/k", CNIKubeconfig: "/c", MTU: 1450, Uplink: "eth0", HostLocal: tc.hostLocal, IPv4Pools: []string{"pods"}}
		data, err := calicoCNIConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			Plugins []struct {
				Type string         `json:"type"`
				MTU  int            `json:"mtu"`
				IPAM map[string]any `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal(data, &conf); err != nil {
			t.Fatal(err)
		}
		if p := conf.Plugins[0]; p.Type != "calico" || p.MTU != 1450 || p.IPAM["type"] != tc.ipam {
			t.Errorf("host-local %v: the first plugin is %+v", tc.hostLocal, p)
		}
		if env := calicoEnv(cfg); !slices.Contains(env, tc.backend) || !slices.Contains(env, "FELIX_USAGEREPORTINGENABLED=false") {
			t.Errorf("host-local %v: calico-node's environment lacks %s: %v", tc.hostLocal, tc.backend, env)
		}
		if _, err := cfg.validate(); err != nil {
			t.Errorf("host-local %v: %v", tc.hostLocal, err)
		}
	}
}

// A Calico node without its binaries, credentials or a sane MTU is refused at start.
func TestCalicoNodeNeedsBinariesCredentialsAndMTU(t *testing.T) {
	cfg := validConfig()
	cfg.Calico = &Calico{MTU: 100}
	if _, err := cfg.validate(); err == nil {
		t.Error("no error")
	}
}
