// Package remote builds API clients for the local cluster and for each remote cluster, and
// tracks whether each remote is reachable.
package remote

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is one remote cluster a component reads from.
type Cluster struct {
	Name   string
	Config *rest.Config
	Client kubernetes.Interface
}

// ClientOptions tune every client a component builds.
type ClientOptions struct {
	UserAgent string
	QPS       float32
	Burst     int
}

func (o ClientOptions) apply(cfg *rest.Config) {
	cfg.UserAgent = o.UserAgent
	cfg.QPS = o.QPS
	cfg.Burst = o.Burst
	// Protobuf for the built-in types: decoding a list of thousands of Services or
	// EndpointSlices allocates a fraction of what JSON does, and the peak memory of a start is
	// that decoding. The dynamic client (Calico's resources, which have no protobuf) asks for
	// JSON by itself.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
}

// KubeconfigPath is where a remote's kubeconfig is mounted: <dir>/<name>/kubeconfig.
func KubeconfigPath(dir, name string) string {
	return filepath.Join(dir, name, "kubeconfig")
}

// LoadRemotes builds a client for each named remote from its kubeconfig under dir. Errors name
// the file. A kubeconfig whose user reads a token from a file (tokenFile) has that file re-read
// by client-go, so a rotated token is picked up without a restart.
func LoadRemotes(dir string, names []string, opts ClientOptions) ([]Cluster, error) {
	clusters := make([]Cluster, 0, len(names))
	for _, name := range names {
		path := KubeconfigPath(dir, name)
		cfg, err := loadKubeconfig(path)
		if err != nil {
			return nil, fmt.Errorf("remote %q: kubeconfig %s: %w", name, path, err)
		}
		opts.apply(cfg)
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("remote %q: kubeconfig %s: %w", name, path, err)
		}
		clusters = append(clusters, Cluster{Name: name, Config: cfg, Client: client})
	}
	return clusters, nil
}

// LocalConfig returns the local cluster's client configuration: the kubeconfig at path, or the
// in-cluster configuration when path is empty.
func LocalConfig(path string, opts ClientOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: not set and no in-cluster configuration: %w", err)
		}
	} else {
		cfg, err = loadKubeconfig(path)
		if err != nil {
			return nil, fmt.Errorf("SEMAPHORE_LOCAL_KUBECONFIG: %s: %w", path, err)
		}
	}
	opts.apply(cfg)
	return cfg, nil
}

func loadKubeconfig(path string) (*rest.Config, error) {
	// LoadFromFile fails on a missing file, unlike the loading rules, which would turn it into
	// an empty, "valid" config pointing at localhost that fails only much later.
	cc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	// Token files and certificate paths in a kubeconfig are relative to the file itself: a
	// Secret mounted as <dir>/<remote>/{kubeconfig,token} says "tokenFile: token".
	if err := clientcmd.ResolveLocalPaths(cc); err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*cc, cc.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}
