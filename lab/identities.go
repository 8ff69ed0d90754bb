package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/internal/remote"
)

// checkIdentities checks, for every controller pod, who it is to each cluster it talks to, with
// the credentials the kubelet gave the pod, read from inside its container: its ServiceAccount
// token must be its release's ServiceAccount, each remote's kubeconfig the ServiceAccount
// semaphore-remote made in that remote for this cluster, and that one must be refused any
// write. It returns the problems and prints one line per controller.
func (l *lab) checkIdentities(ctx context.Context) []string {
	var problems []string
	fmt.Fprintln(l.out, "Identities (SelfSubjectReview and SelfSubjectAccessReview with each pod's own credentials)")
	st := l.snapshot()
	for _, c := range st.Controllers {
		root, err := containerRoot(c.PodUID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", c.Component, c.where(), err))
			continue
		}
		var seen []string
		local, _, err := whoAmI(ctx, inClusterConfig(root, l.clusters[c.Cluster].Config.Host, l.clusters[c.Cluster].Config.CAData))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s in %s: local identity: %v", c.Component, c.Cluster, err))
		case !strings.HasPrefix(local, "system:serviceaccount:"+semaphoreNamespace+":"):
			problems = append(problems, fmt.Sprintf("%s in %s is %s locally, not a ServiceAccount of the umbrella release", c.Component, c.Cluster, local))
		default:
			seen = append(seen, c.Cluster+": "+local)
		}
		for _, r := range remotesOf(c.Cluster) {
			want := "system:serviceaccount:" + remoteNamespace + ":semaphore-remote-" + c.Cluster
			cfg, err := remoteConfig(root, remote.KubeconfigPath(c.RemotesDir, r), l.clusters[r].Config.Host)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s in %s: kubeconfig of %s: %v", c.Component, c.Cluster, r, err))
				continue
			}
			got, client, err := whoAmI(ctx, cfg)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s in %s: identity in %s: %v", c.Component, c.Cluster, r, err))
				continue
			}
			if got != want {
				problems = append(problems, fmt.Sprintf("%s in %s is %s in %s, want %s (semaphore-remote's)", c.Component, c.Cluster, got, r, want))
				continue
			}
			if allowed, err := canWrite(ctx, client); err != nil || allowed {
				problems = append(problems, fmt.Sprintf("%s in %s may write services in %s as %s (err %v)", c.Component, c.Cluster, r, got, err))
				continue
			}
			seen = append(seen, r+": "+strings.TrimPrefix(got, "system:serviceaccount:")+" (read-only)")
		}
		fmt.Fprintf(l.out, "  %-37s %s\n", c.Cluster+"/"+c.PodName, strings.Join(seen, ", "))
	}
	return problems
}

// inClusterConfig is what client-go's in-cluster configuration reads in the container whose
// root is root, pointed at the API server's address on this machine (host, caData: the same
// server certificate, which names 127.0.0.1 too).
func inClusterConfig(root, host string, caData []byte) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerTokenFile: filepath.Join(root, serviceAccountDir, corev1.ServiceAccountTokenKey),
		TLSClientConfig: rest.TLSClientConfig{CAData: caData},
		Timeout:         5 * time.Second,
	}
}

// serviceAccountDir is where a pod's ServiceAccount token is mounted.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

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

// whoAmI is the user cfg authenticates as, and a client that uses it.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	user, err := remote.WhoAmI(ctx, cs, "")
	return user, cs, err
}

// canWrite tells whether client's user may create Services in any namespace.
func canWrite(ctx context.Context, client kubernetes.Interface) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "services"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

func clientsetOf(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
