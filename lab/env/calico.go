package env

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// Calico in every cluster, as its users run it (docs/calico.md): the release's CRDs in every
// API server, Calico's own RBAC from its manifests, and per cluster kube-controllers and the
// Calico API server (projectcalico.org/v3, an aggregated API); on every node calico-node and
// Felix with Calico's CNI plugin (lab/node). In CalicoCluster pods get their addresses from
// calico-ipam, in blocks of the cluster's IP pools that the nodes claim as they need them,
// and reach the pods of the cluster's other nodes over VXLAN. gcp and merit run Calico as on a
// provider that allocates each node a pod CIDR and routes it (GKE's VPC-native clusters):
// host-local IPAM on the Node's pod CIDR, Calico for policy only, which keeps the other way
// semaphore-wireguard learns a remote's pods (its Nodes' pod CIDRs) in the lab, and the
// hostile remote's fake Nodes meaningful. Calico's binaries run as the
// nodes' and control planes' other programs do, as processes in the lab's namespaces, each
// with the ServiceAccount token of the workload it would be.
//
// In CalicoCluster, fluentd's addresses are borrowed, by calico-ipam itself: fluentd takes its
// addresses from FluentdPool, a pool of one block, which a pod on the cluster's first node
// claimed first (BlockHolderName); fluentd runs on the last node, which can claim no block of
// that pool, and calico-ipam lends it addresses of the first node's block.

const (
	// vxlanOverhead is what VXLAN's headers take of the node network's MTU.
	vxlanOverhead = 50
	// apiServerPort is where the Calico API server listens, at its cluster's private API
	// address in the provider's router.
	calicoAPIServerPort = 5443
)

// calicoCRDs is the release's CRDs (ci/calico.sh keeps them with the binaries).
func (l *Lab) calicoCRDs() string { return filepath.Join(l.bin.calico, "crds.yaml") }

// calicoBinaries builds Calico's binaries (or finds them in the cache) with ci/calico.sh.
func calicoBinaries() (string, error) { return testbed.CIToolPath(nil, "calico.sh") }

// calicoNode is what node n needs to be a Calico node.
func (l *Lab) calicoNode(n layout.Node) *node.Calico {
	dir := l.Path("clusters", n.Cluster, "calico")
	c := &node.Calico{
		BinDir:        l.bin.calico,
		Kubeconfig:    filepath.Join(dir, "calico-node.kubeconfig"),
		CNIKubeconfig: filepath.Join(dir, "calico-cni-plugin.kubeconfig"),
		MTU:           layout.SpecOf(n.Cluster).Network.MTU,
		Uplink:        nodeLink,
		HostLocal:     n.Cluster != layout.CalicoCluster,
	}
	if !c.HostLocal {
		c.MTU -= vxlanOverhead
		// FluentdPool only for the pods that ask for it.
		c.IPv4Pools = []string{layout.PodsPool}
	}
	return c
}

// startCalico makes every cluster a Calico cluster before its nodes start: Calico's RBAC and
// the API server's APIService from the release's manifests, a kubeconfig per Calico
// ServiceAccount, the cluster's own IP pools, and kube-controllers and the Calico API server
// in the provider's router. It returns once projectcalico.org/v3 is served everywhere.
func (l *Lab) startCalico(ctx context.Context) error {
	var children []*Child
	l.onTeardown(func() { stopAll(children, syscall.SIGTERM, 10*time.Second) })
	for _, spec := range layout.ClusterSpecs {
		if err := l.applyCalicoManifests(ctx, spec); err != nil {
			return fmt.Errorf("%s: Calico's manifests: %w", spec.Name, err)
		}
		if err := l.writeCalicoKubeconfigs(ctx, spec.Name); err != nil {
			return fmt.Errorf("%s: Calico's credentials: %w", spec.Name, err)
		}
		if err := l.createIPPools(ctx, spec.Name); err != nil {
			return fmt.Errorf("%s: IP pools: %w", spec.Name, err)
		}
		started, err := l.startCalicoControllers(spec)
		children = append(children, started...)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	for _, spec := range layout.ClusterSpecs {
		if err := l.waitCalicoAPI(ctx, spec.Name); err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	if err := l.createRemotePools(ctx); err != nil {
		return err
	}
	l.Logf("Calico %s in %v: kube-controllers and the Calico API server (projectcalico.org/v3) in each provider's router", layout.CalicoVersion, layout.ClusterNames())
	return nil
}

// startCalicoControllers starts cluster spec's kube-controllers and Calico API server in its
// provider's router, where its private API address is.
func (l *Lab) startCalicoControllers(spec layout.ClusterSpec) ([]*Child, error) {
	dir := l.Path("clusters", spec.Name, "calico")
	var out []*Child
	// Each runs as its ServiceAccount (calicoServiceAccounts), which also names its log.
	programs := []struct {
		serviceAccount, binary string
		env, args              []string
	}{
		{"calico-kube-controllers", "kube-controllers", []string{"ENABLED_CONTROLLERS=node"},
			[]string{"-status-file", filepath.Join(dir, "kube-controllers-status.json")}},
		{"calico-apiserver", "calico-apiserver", nil, []string{
			"--secure-port=" + strconv.Itoa(calicoAPIServerPort), "--bind-address=" + spec.APIAddr,
			"--tls-cert-file=" + l.Path("clusters", spec.Name, "pki", calicoAPIServerCertFile),
			"--tls-private-key-file=" + l.Path("clusters", spec.Name, "pki", calicoAPIServerKeyFile),
			"--kubeconfig=" + filepath.Join(dir, "calico-apiserver.kubeconfig"),
			"--authentication-kubeconfig=" + filepath.Join(dir, "calico-apiserver.kubeconfig"),
			"--authorization-kubeconfig=" + filepath.Join(dir, "calico-apiserver.kubeconfig"),
		}},
	}
	for _, p := range programs {
		args := append([]string{"netns", "exec", layout.VPCNetns(spec.Name), "env",
			"KUBECONFIG=" + filepath.Join(dir, p.serviceAccount+".kubeconfig"), "DATASTORE_TYPE=kubernetes"}, p.env...)
		args = append(append(args, filepath.Join(l.bin.calico, p.binary)), p.args...)
		name := p.serviceAccount + "-" + spec.Name
		ch, err := l.startChild(name, "ip", args, nil, l.Path("logs", name+".log"), false)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p.serviceAccount, err)
		}
		out = append(out, ch)
	}
	return out, nil
}
