package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// startClusters starts every cluster's control plane, in parallel: an API server (etcd and
// kube-apiserver through envtest, with the lab's certificates and the flags of a real cluster),
// kube-controller-manager and kube-scheduler. Every API server serves Calico's CRDs, from the
// Calico release (calico.go).
// It also writes .lab/kubeconfig, a context per cluster.
func (l *Lab) startClusters(ctx context.Context) error {
	// envtest keeps etcd's data in temporary directories. Under the lab directory they are
	// removed with it even after a lab that was killed, and the processes' command lines name
	// the lab, which tells them apart from those of tests.
	tmp := l.Path("tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return err
	}
	l.Logf("starting clusters %s (etcd, kube-apiserver, kube-controller-manager, kube-scheduler each)…", strings.Join(layout.ClusterNames(), ", "))
	clusters := make([]*testbed.Cluster, len(layout.ClusterSpecs))
	errs := make([]error, len(layout.ClusterSpecs))
	var wg sync.WaitGroup
	for i, spec := range layout.ClusterSpecs {
		wg.Go(func() { clusters[i], errs[i] = l.startAPIServer(spec) })
	}
	wg.Wait()
	l.recordClusters(clusters)
	// envtest starts kube-apiserver and etcd as our children but in their own process groups
	// and without a parent-death signal: remember them, so that the reaper or `lab down` can
	// stop them when the lab dies without tearing down.
	l.recordChildren("kube-apiserver", "etcd")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := l.startControllerManagers(ctx); err != nil {
		return err
	}
	return l.writeKubeconfig()
}

// recordClusters records the clusters that started (clusters[i] is ClusterSpecs[i]'s, nil
// when it did not), and registers how to stop them.
func (l *Lab) recordClusters(clusters []*testbed.Cluster) {
	var started []*testbed.Cluster
	for i, c := range clusters {
		if c == nil {
			continue
		}
		started = append(started, c)
		l.clusters[c.Name] = c
		l.update(func(rec *layout.Record) {
			rec.Clusters = append(rec.Clusters, layout.ClusterRecord{
				Name:             c.Name,
				Server:           c.Config.Host,
				ServiceCIDR:      layout.ClusterSpecs[i].ServiceCIDR,
				Kubeconfig:       c.Kubeconfig,
				DirectKubeconfig: c.DirectKubeconfig,
			})
		})
	}
	l.onTeardown(func() {
		var wg sync.WaitGroup
		for _, c := range started {
			wg.Go(c.Stop)
		}
		wg.Wait()
		l.Logf("stopped the API servers")
	})
}

// startAPIServer starts spec's API server with the certificates of clusterPKI, advertised at
// the cluster's private address (the kubernetes Service's endpoint), with the Node and
// RBAC authorizers and the ServiceAccount admission plugin of a real cluster.
func (l *Lab) startAPIServer(spec layout.ClusterSpec) (*testbed.Cluster, error) {
	certs := l.Path("clusters", spec.Name, "pki")
	ca, err := clusterPKI(certs, spec.Name, []net.IP{
		net.ParseIP("127.0.0.1"), net.ParseIP(spec.APIServiceIP()), net.ParseIP(spec.APIAddr), net.ParseIP(spec.PublicAPIAddr),
	})
	if err != nil {
		return nil, err
	}
	// envtest takes single files as well as directories: the Calico release's CRDs.
	crds := []string{l.calicoCRDs()}
	egress, err := l.writeEgressSelectorConfig(spec.Name, l.Path("clusters", spec.Name))
	if err != nil {
		return nil, err
	}
	return testbed.StartCluster(spec.Name, testbed.Options{
		Dir:          l.Path("clusters", spec.Name),
		ServiceCIDRs: spec.ServiceCIDR,
		CRDDirs:      crds,
		CertDir:      certs,
		ServingCA:    ca,
		APIServerFlags: map[string]string{
			"advertise-address":  spec.APIAddr,
			"authorization-mode": "Node,RBAC",
			// envtest disables it, having no controller manager to make ServiceAccounts;
			// here pods get their tokens as in any cluster.
			"disable-admission-plugins": "",
			"enable-admission-plugins":  "NodeRestriction",
			// What it dials in the cluster goes through the egress proxy (egress.go).
			"egress-selector-config-file": egress,
			// The kubelets at their private addresses (the Nodes' host names resolve nowhere),
			// with a client certificate they trust.
			"kubelet-preferred-address-types": "InternalIP,Hostname",
			"kubelet-client-certificate":      filepath.Join(certs, kubeletClientCertFile),
			"kubelet-client-key":              filepath.Join(certs, kubeletClientKeyFile),
			// The aggregation layer, for the Calico API server (calico.go), reached at its
			// Service's endpoint through the egress proxy.
			"requestheader-client-ca-file":       filepath.Join(certs, frontProxyCAFile),
			"requestheader-allowed-names":        frontProxyClientName,
			"requestheader-username-headers":     "X-Remote-User",
			"requestheader-group-headers":        "X-Remote-Group",
			"requestheader-extra-headers-prefix": "X-Remote-Extra-",
			"proxy-client-cert-file":             filepath.Join(certs, frontProxyClientCertFile),
			"proxy-client-key-file":              filepath.Join(certs, frontProxyClientKeyFile),
			"enable-aggregator-routing":          "true",
		},
	})
}

// controlPlaneProgram is one of the programs beside a cluster's API server, with the identity
// RBAC's bootstrap roles are bound to.
type controlPlaneProgram struct {
	binary, user string
	args         []string
}

// controlPlanePrograms are kube-controller-manager and kube-scheduler for spec, whose files
// are in dir.
func controlPlanePrograms(spec layout.ClusterSpec, dir string) []controlPlaneProgram {
	return []controlPlaneProgram{
		{"kube-controller-manager", "system:kube-controller-manager", []string{
			"--use-service-account-credentials",
			"--root-ca-file=" + filepath.Join(dir, "pki", caFile),
			"--service-account-private-key-file=" + filepath.Join(dir, "pki", saKeyFile),
			"--service-cluster-ip-range=" + spec.ServiceCIDR,
			"--cluster-name=" + spec.Name,
			// calico-ipam gives the pods their addresses: the Nodes have no pod CIDR.
			"--allocate-node-cidrs=false",
		}},
		{"kube-scheduler", "system:kube-scheduler", nil},
	}
}

// startControllerManagers runs kube-controller-manager and kube-scheduler for every cluster,
// each with its own identity (the users RBAC's bootstrap roles are bound to).
func (l *Lab) startControllerManagers(ctx context.Context) error {
	var started []*Child
	l.onTeardown(func() {
		stopAll(started, syscall.SIGTERM, 10*time.Second)
		l.Logf("stopped the controller managers and schedulers")
	})
	for _, spec := range layout.ClusterSpecs {
		c, dir := l.clusters[spec.Name], l.Path("clusters", spec.Name)
		for _, p := range controlPlanePrograms(spec, dir) {
			kubeconfig := filepath.Join(dir, p.binary+".kubeconfig")
			if err := c.AddUser(kubeconfig, p.user, nil, ""); err != nil {
				return fmt.Errorf("%s: %s's credentials: %w", spec.Name, p.binary, err)
			}
			args := append([]string{"--kubeconfig=" + kubeconfig, "--secure-port=0", "--leader-elect=false"}, p.args...)
			name := p.binary + "-" + spec.Name
			ch, err := l.startChild(name, filepath.Join(l.bin.kube, p.binary), args, nil, l.Path("logs", name+".log"), false)
			if err != nil {
				return fmt.Errorf("%s: %w", spec.Name, err)
			}
			started = append(started, ch)
		}
	}
	l.Logf("started kube-controller-manager and kube-scheduler in %s", strings.Join(layout.ClusterNames(), ", "))
	return ctx.Err()
}

// writeKubeconfig writes .lab/kubeconfig: every cluster's admin credentials, a context each
// named after the cluster, through the proxies that can cut a cluster off.
func (l *Lab) writeKubeconfig() error {
	merged := clientcmdapi.NewConfig()
	for _, name := range layout.ClusterNames() {
		kc, err := clientcmd.LoadFromFile(l.clusters[name].Kubeconfig)
		if err != nil {
			return err
		}
		ctx := kc.Contexts[kc.CurrentContext]
		if ctx == nil {
			return fmt.Errorf("%s: the kubeconfig has no current context", name)
		}
		merged.Clusters[name] = kc.Clusters[ctx.Cluster]
		merged.AuthInfos[name+"-admin"] = kc.AuthInfos[ctx.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	}
	merged.CurrentContext = layout.ClusterNames()[0]
	if err := clientcmd.WriteToFile(*merged, l.Path(layout.KubeconfigFile)); err != nil {
		return err
	}
	l.update(func(rec *layout.Record) { rec.Kubeconfig = l.Path(layout.KubeconfigFile) })
	return nil
}
