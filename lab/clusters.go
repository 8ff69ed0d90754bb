package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-semaphore/semaphore/internal/testbed"
)

// clusterSpec is one cluster of the lab.
type clusterSpec struct {
	Name string
	// ServiceCIDR is the cluster's Service range. The ranges do not overlap, as in a real
	// multi-cluster network, so a ClusterIP tells which cluster it belongs to.
	ServiceCIDR string
	// PodCIDR is where the sample pods' IPs come from: a part of 198.18.0.0/15, the benchmark
	// range, so nothing in the lab ever names a real address.
	PodCIDR string
	// APIAddr is the API server's address on the underlay, where nodes and pods reach it: the
	// endpoint of the cluster's kubernetes Service.
	APIAddr string
}

// apiServiceIP is the ClusterIP of the cluster's kubernetes Service: the first of its range.
func (c clusterSpec) apiServiceIP() string {
	return addrAdd(netip.MustParsePrefix(c.ServiceCIDR).Addr(), 1).String()
}

// dnsServiceIP is the ClusterIP of the cluster's DNS Service (kube-dns), as kubeadm picks it.
func (c clusterSpec) dnsServiceIP() string {
	return addrAdd(netip.MustParsePrefix(c.ServiceCIDR).Addr(), 10).String()
}

// clusterSpecs are the lab's clusters, named as in the Semaphore blog post: two clouds and an
// on-prem data centre.
var clusterSpecs = []clusterSpec{
	{Name: "aws", ServiceCIDR: "10.101.0.0/16", PodCIDR: "198.18.1.0/24", APIAddr: "198.19.0.1"},
	{Name: "gcp", ServiceCIDR: "10.102.0.0/16", PodCIDR: "198.18.2.0/24", APIAddr: "198.19.0.2"},
	{Name: "merit", ServiceCIDR: "10.103.0.0/16", PodCIDR: "198.18.3.0/24", APIAddr: "198.19.0.3"},
}

// semaphoreNamespace is the namespace the umbrella chart is installed in: the controllers'
// Leases and the service mirror's mirrors live there.
const semaphoreNamespace = "semaphore"

// kubeconfigFile is the lab's kubeconfig (in the lab directory): a context per cluster.
const kubeconfigFile = "kubeconfig"

func clusterNames() []string {
	names := make([]string, len(clusterSpecs))
	for i, c := range clusterSpecs {
		names[i] = c.Name
	}
	return names
}

// specOf is the spec of the cluster named name.
func specOf(name string) clusterSpec {
	return clusterSpecs[slices.IndexFunc(clusterSpecs, func(c clusterSpec) bool { return c.Name == name })]
}

// remotesOf are the clusters that cluster reads from: all the others.
func remotesOf(cluster string) []string {
	var remotes []string
	for _, c := range clusterSpecs {
		if c.Name != cluster {
			remotes = append(remotes, c.Name)
		}
	}
	return remotes
}

// buildBinaries builds (or finds in their caches) everything the lab runs, in parallel.
func (l *lab) buildBinaries(ctx context.Context) error {
	builds := []struct {
		msg   string
		build func() (string, error)
		path  *string
	}{
		// The test harness builds these through ci/kube-binaries.sh and ci/coredns.sh, which
		// cache them in ~/.cache/semaphore and return at once when they are there.
		{"Kubernetes (first run only, ~12 min)", kubeBinaries, &l.bin.kube},
		{"CoreDNS (first run only, ~2.5 min)", testbed.CoreDNSBinary, &l.bin.coredns},
		{"helm (first run only, ~2 min)", helmBinary, &l.bin.helm},
		{"kubectl-semaphore", func() (string, error) { return testbed.BuildBinary(pluginPackage, l.path("bin")) }, &l.bin.plugin},
		{"egress proxy", func() (string, error) { return testbed.BuildBinary(egressPackage, l.path("bin")) }, &l.bin.egress},
	}
	errs := make([]error, len(builds))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		pending = map[string]bool{}
	)
	start := time.Now()
	for i, b := range builds {
		l.logf("building %s…", b.msg)
		name, _, _ := strings.Cut(b.msg, " (")
		pending[name] = true
		wg.Go(func() {
			path, err := b.build()
			mu.Lock()
			delete(pending, name)
			mu.Unlock()
			if took := time.Since(start); took > 10*time.Second && err == nil {
				l.logf("built %s in %s", name, took.Round(time.Second))
			}
			if err != nil {
				errs[i] = err
				return
			}
			if b.path != nil {
				*b.path = path
			}
		})
	}
	// A cold first run builds for minutes: say every half minute what is still being built.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return errors.Join(errs...)
		case <-tick.C:
			mu.Lock()
			names := slices.Sorted(maps.Keys(pending))
			mu.Unlock()
			l.logf("still building %s (%s so far; the results are cached for the next runs)…", strings.Join(names, ", "), time.Since(start).Round(time.Second))
		}
	}
}

// kubeBinaries builds (or finds in the cache) etcd and the Kubernetes binaries of a cluster and
// its nodes with ci/kube-binaries.sh, and points envtest at them.
func kubeBinaries() (string, error) {
	out, err := exec.Command("bash", filepath.Join(testbed.RepoRoot(), "ci", "kube-binaries.sh"), "all").Output()
	if err != nil {
		return "", fmt.Errorf("ci/kube-binaries.sh all: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	return dir, os.Setenv("KUBEBUILDER_ASSETS", dir)
}

// startClusters starts every cluster's control plane, in parallel: an API server (etcd and
// kube-apiserver through envtest, with the lab's certificates and the flags of a real cluster),
// kube-controller-manager and kube-scheduler. The GlobalNetworkSet CRD stands in for the Calico
// API server (calicoCRD); the Calico-way cluster also serves Calico's IPAMBlocks (ipamBlockCRD).
// It also writes .lab/kubeconfig, a context per cluster.
func (l *lab) startClusters(ctx context.Context) error {
	// envtest keeps etcd's data in temporary directories. Under the lab directory they are
	// removed with it even after a lab that was killed, and the processes' command lines name
	// the lab, which tells them apart from those of tests.
	tmp := l.path("tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return err
	}
	l.logf("starting clusters %s (etcd, kube-apiserver, kube-controller-manager, kube-scheduler each)…", strings.Join(clusterNames(), ", "))
	clusters := make([]*testbed.Cluster, len(clusterSpecs))
	errs := make([]error, len(clusterSpecs))
	var wg sync.WaitGroup
	for i, spec := range clusterSpecs {
		wg.Go(func() { clusters[i], errs[i] = l.startAPIServer(spec) })
	}
	wg.Wait()

	var started []*testbed.Cluster
	for i, c := range clusters {
		if c == nil {
			continue
		}
		started = append(started, c)
		l.clusters[c.Name] = c
		l.mu.Lock()
		l.state.Clusters = append(l.state.Clusters, ClusterState{
			Name:             c.Name,
			Server:           c.Config.Host,
			ServiceCIDR:      clusterSpecs[i].ServiceCIDR,
			Kubeconfig:       c.Kubeconfig,
			DirectKubeconfig: c.DirectKubeconfig,
		})
		l.mu.Unlock()
	}
	l.onTeardown(func() {
		var wg sync.WaitGroup
		for _, c := range started {
			wg.Go(c.Stop)
		}
		wg.Wait()
		l.logf("stopped the API servers")
	})
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

// startAPIServer starts spec's API server with the certificates of clusterPKI, advertised at
// the cluster's address on the underlay (the kubernetes Service's endpoint), with the Node and
// RBAC authorizers and the ServiceAccount admission plugin of a real cluster.
func (l *lab) startAPIServer(spec clusterSpec) (*testbed.Cluster, error) {
	certs := l.path("clusters", spec.Name, "pki")
	ca, err := clusterPKI(certs, spec.Name, []net.IP{
		net.ParseIP("127.0.0.1"), net.ParseIP(spec.apiServiceIP()), net.ParseIP(spec.APIAddr),
	})
	if err != nil {
		return nil, err
	}
	// envtest takes single files as well as directories.
	crds := []string{calicoCRD}
	if spec.Name == calicoCluster {
		crds = append(crds, ipamBlockCRD) // the Calico-way cluster's IPAM blocks (calico.go)
	}
	egress, err := l.writeEgressSelectorConfig(l.path("clusters", spec.Name))
	if err != nil {
		return nil, err
	}
	return testbed.StartCluster(spec.Name, testbed.Options{
		Dir:          l.path("clusters", spec.Name),
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
			// The kubelets at their underlay addresses (the Nodes' host names resolve nowhere),
			// with a client certificate they trust.
			"kubelet-preferred-address-types": "InternalIP,Hostname",
			"kubelet-client-certificate":      filepath.Join(certs, kubeletClientCertFile),
			"kubelet-client-key":              filepath.Join(certs, kubeletClientKeyFile),
		},
	})
}

// startControllerManagers runs kube-controller-manager and kube-scheduler for every cluster,
// each with its own identity (the users RBAC's bootstrap roles are bound to).
func (l *lab) startControllerManagers(ctx context.Context) error {
	var started []*child
	l.onTeardown(func() {
		stopAll(started, syscall.SIGTERM, 10*time.Second)
		l.logf("stopped the controller managers and schedulers")
	})
	for _, spec := range clusterSpecs {
		c, dir := l.clusters[spec.Name], l.path("clusters", spec.Name)
		for _, p := range []struct {
			binary, user string
			args         []string
		}{
			{"kube-controller-manager", "system:kube-controller-manager", []string{
				"--use-service-account-credentials",
				"--root-ca-file=" + filepath.Join(dir, "pki", caFile),
				"--service-account-private-key-file=" + filepath.Join(dir, "pki", saKeyFile),
				"--service-cluster-ip-range=" + spec.ServiceCIDR,
				"--cluster-name=" + spec.Name,
				// The lab sets the Nodes' pod CIDRs itself (nodePodCIDR), but for the
				// Calico-way cluster's, which have none.
				"--allocate-node-cidrs=false",
			}},
			{"kube-scheduler", "system:kube-scheduler", nil},
		} {
			kubeconfig := filepath.Join(dir, p.binary+".kubeconfig")
			if err := c.AddUser(kubeconfig, p.user, nil, ""); err != nil {
				return fmt.Errorf("%s: %s's credentials: %w", spec.Name, p.binary, err)
			}
			args := append([]string{"--kubeconfig=" + kubeconfig, "--secure-port=0", "--leader-elect=false"}, p.args...)
			name := p.binary + "-" + spec.Name
			ch, err := l.startChild(name, filepath.Join(l.bin.kube, p.binary), args, nil, l.path("logs", name+".log"), false)
			if err != nil {
				return fmt.Errorf("%s: %w", spec.Name, err)
			}
			started = append(started, ch)
		}
	}
	l.logf("started kube-controller-manager and kube-scheduler in %s", strings.Join(clusterNames(), ", "))
	return ctx.Err()
}

// writeKubeconfig writes .lab/kubeconfig: every cluster's admin credentials, a context each
// named after the cluster, through the proxies that can cut a cluster off.
func (l *lab) writeKubeconfig() error {
	merged := clientcmdapi.NewConfig()
	for _, name := range clusterNames() {
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
	merged.CurrentContext = clusterNames()[0]
	if err := clientcmd.WriteToFile(*merged, l.path(kubeconfigFile)); err != nil {
		return err
	}
	l.mu.Lock()
	l.state.Kubeconfig = l.path(kubeconfigFile)
	l.mu.Unlock()
	return nil
}
