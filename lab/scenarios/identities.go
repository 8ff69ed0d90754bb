package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/status"
)

// checkIdentities checks, for every controller pod, who it is to each cluster it talks to, with
// the credentials the kubelet gave the pod, read from inside its container: its ServiceAccount
// token must be its release's ServiceAccount, each remote's kubeconfig the ServiceAccount
// semaphore-remote made in that remote for this cluster. It returns the problems and prints
// one line per controller.
//
// That is all it asks: `kubectl semaphore check` (checkWithPlugin, which runs later) asks each
// remote, with the same token (the Secret the pod mounts), what it may do, and fails on any
// write or read beyond what the components need. What the plugin cannot see is the pod's side:
// the files in its container, which are what the controller really uses.
func checkIdentities(ctx context.Context, l *env.Lab) []string {
	var problems []string
	fmt.Fprintln(l.Out(), "Identities (SelfSubjectReview with each pod's own credentials)")
	for _, c := range l.Record().Controllers {
		seen, p := podIdentities(ctx, l, c)
		problems = append(problems, p...)
		if seen != nil {
			fmt.Fprintf(l.Out(), "  %-37s %s\n", c.Cluster+"/"+c.PodName, strings.Join(seen, ", "))
		}
	}
	return problems
}

// podIdentities are who controller c is locally and in each remote, with the credentials in
// its container, and the problems: nil seen when its container cannot be found.
func podIdentities(ctx context.Context, l *env.Lab, c layout.Controller) (seen, problems []string) {
	root, err := status.ContainerRoot(c.PodUID)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s %s: %v", c.Component, c.Where(), err)}
	}
	seen = []string{}
	local := l.Cluster(c.Cluster).Config
	switch user, err := whoAmI(ctx, inClusterConfig(root, local.Host, local.CAData)); {
	case err != nil:
		problems = append(problems, fmt.Sprintf("%s in %s: local identity: %v", c.Component, c.Cluster, err))
	case !strings.HasPrefix(user, "system:serviceaccount:"+layout.SemaphoreNamespace+":"):
		problems = append(problems, fmt.Sprintf("%s in %s is %s locally, not a ServiceAccount of the umbrella release", c.Component, c.Cluster, user))
	default:
		seen = append(seen, c.Cluster+": "+user)
	}
	for _, r := range layout.RemotesOf(c.Cluster) {
		want := "system:serviceaccount:" + layout.RemoteNamespace + ":semaphore-remote-" + c.Cluster
		cfg, err := remoteConfig(root, remote.KubeconfigPath(c.RemotesDir, r), l.Cluster(r).Config.Host)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s in %s: kubeconfig of %s: %v", c.Component, c.Cluster, r, err))
			continue
		}
		switch got, err := whoAmI(ctx, cfg); {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s in %s: identity in %s: %v", c.Component, c.Cluster, r, err))
		case got != want:
			problems = append(problems, fmt.Sprintf("%s in %s is %s in %s, want %s (semaphore-remote's)", c.Component, c.Cluster, got, r, want))
		default:
			seen = append(seen, r+": "+strings.TrimPrefix(got, "system:serviceaccount:"))
		}
	}
	return seen, problems
}

// inClusterConfig is what client-go's in-cluster configuration reads in the container whose
// root is root, pointed at the API server's address on this machine (host, caData: the same
// server certificate, which names 127.0.0.1 too).
func inClusterConfig(root, host string, caData []byte) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerTokenFile: status.ServiceAccountToken(root),
		TLSClientConfig: rest.TLSClientConfig{CAData: caData},
		Timeout:         5 * time.Second,
	}
}

// remoteConfig is the kubeconfig at path in the container whose root is root, its files read
// from there too, pointed at the remote API server's address on this machine.
func remoteConfig(root, path, host string) (*rest.Config, error) {
	kc, err := clientcmd.LoadFromFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	// A relative path in a kubeconfig is relative to the kubeconfig's directory.
	inRoot := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		if p != "" {
			p = filepath.Join(root, p)
		}
		return p
	}
	for _, a := range kc.AuthInfos {
		a.TokenFile = inRoot(a.TokenFile)
	}
	for _, c := range kc.Clusters {
		c.CertificateAuthority = inRoot(c.CertificateAuthority)
		c.Server = host
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	return cfg, nil
}

// whoAmI is the user cfg authenticates as.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return remote.WhoAmI(ctx, cs, "")
}
