package release

import (
	"context"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Remote is a remote cluster as a component reads it.
type Remote struct {
	Name string
	// Config is the client configuration the component's pods get for it: the kubeconfig and
	// token of its volume, read from the very Secrets the pods mount.
	Config *rest.Config
	// Secrets are the Secrets the credentials come from, for messages.
	Secrets []string
}

// AllowExecPluginsFlag is the command-line flag (without its dashes) that sets
// CredentialOptions.AllowExecPlugins.
const AllowExecPluginsFlag = "allow-exec-plugins"

// CredentialOptions say how far this machine trusts the credentials it reads out of a cluster.
type CredentialOptions struct {
	// AllowExecPlugins lets a kubeconfig read from a Secret have its user run an exec credential
	// plugin or an auth-provider on this machine. Off, such a kubeconfig is refused
	// (*RunsHereError): whoever may write the Secret would choose what runs on the operator's
	// workstation.
	AllowExecPlugins bool
}

// RunsHereError refuses a kubeconfig read out of a cluster whose user would run something on
// this machine: an exec credential plugin or an auth-provider.
type RunsHereError struct {
	// what is what would run, e.g. `the exec credential plugin "/usr/bin/aws"`.
	what string
}

func (e *RunsHereError) Error() string {
	return fmt.Sprintf("the kubeconfig's user would run %s on this machine: refused, since whoever may write the Secrets chooses what runs here (pass --%s if you trust them)",
		e.what, AllowExecPluginsFlag)
}

// Remote returns the credentials the component's pods have for remote name: the files of
// their volume remote-<name> (the chart projects a kubeconfig, and a token it refers to, into
// <SEMAPHORE_REMOTES_DIR>/<name>/).
func (c Component) Remote(ctx context.Context, client kubernetes.Interface, name string, opts CredentialOptions) (Remote, error) {
	r := Remote{Name: name}
	files, secrets, err := c.volumeFiles(ctx, client, name, func(string) bool { return true })
	r.Secrets = secrets
	if err != nil {
		return r, err
	}
	cfg, err := configFromFiles(files, opts)
	if err != nil {
		return r, fmt.Errorf("remote %s (Secrets %v): %w", name, r.Secrets, err)
	}
	r.Config = cfg
	return r, nil
}

// RemoteCluster is the server and CA (PEM, nil when none) of remote name in the kubeconfig the
// component's pods get, read without its credentials (which need not exist yet): what the
// release says the remote is. secrets name the Secrets it comes from.
func (c Component) RemoteCluster(ctx context.Context, client kubernetes.Interface, name string) (server string, ca []byte, secrets []string, err error) {
	files, secrets, err := c.volumeFiles(ctx, client, name, func(p string) bool { return p == kubeconfigFile })
	if err != nil {
		return "", nil, secrets, err
	}
	kc, err := loadKubeconfig(files)
	if err != nil {
		return "", nil, secrets, fmt.Errorf("remote %s (Secrets %v): %w", name, secrets, err)
	}
	var cluster *clientcmdapi.Cluster
	if kctx := kc.Contexts[kc.CurrentContext]; kctx != nil {
		cluster = kc.Clusters[kctx.Cluster]
	}
	if cluster == nil {
		return "", nil, secrets, fmt.Errorf("remote %s (Secrets %v): the kubeconfig's current context %q names no cluster", name, secrets, kc.CurrentContext)
	}
	return cluster.Server, cluster.CertificateAuthorityData, secrets, nil
}

// volumeFiles reads the files of the component's volume remote-<name> whose paths want
// accepts, from the Secrets the volume projects (skipping those that project none of them),
// and returns them by path with the Secrets read, as namespace/name.
func (c Component) volumeFiles(ctx context.Context, client kubernetes.Interface, name string, want func(path string) bool) (map[string][]byte, []string, error) {
	vol := c.volume("remote-" + name)
	if vol == nil {
		return nil, nil, fmt.Errorf("%s has no volume remote-%s with the credentials of remote %s", c.WorkloadRef(), name, name)
	}
	files := map[string][]byte{}
	var secrets []string
	for _, src := range secretSources(vol) {
		if !src.projects(want) {
			continue
		}
		s, err := client.CoreV1().Secrets(c.Namespace).Get(ctx, src.secretName, metav1.GetOptions{})
		if err != nil {
			return nil, secrets, fmt.Errorf("remote %s: reading Secret %s/%s the pods mount: %w", name, c.Namespace, src.secretName, err)
		}
		secrets = append(secrets, c.Namespace+"/"+src.secretName)
		for key, p := range src.items {
			if v, ok := s.Data[key]; ok && want(p) {
				files[p] = v
			}
		}
	}
	return files, secrets, nil
}

// Remotes returns the credentials of every remote the component reads.
func (c Component) Remotes(ctx context.Context, client kubernetes.Interface, opts CredentialOptions) ([]Remote, []error) {
	var out []Remote
	var errs []error
	for _, name := range c.RemoteNames() {
		r, err := c.Remote(ctx, client, name, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errs
}

func (c Component) volume(name string) *corev1.Volume {
	for i, v := range c.Template.Spec.Volumes {
		if v.Name == name {
			return &c.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// secretSource is a Secret a volume holds, with the path of each key it projects.
type secretSource struct {
	secretName string
	items      map[string]string
}

// projects reports whether the source projects a path want accepts.
func (s secretSource) projects(want func(path string) bool) bool {
	for _, p := range s.items {
		if want(p) {
			return true
		}
	}
	return false
}

// secretSources are the Secrets of a secret or projected volume; a Secret without items
// projects every key under its own name (only "kubeconfig" and "token" matter here).
func secretSources(v *corev1.Volume) []secretSource {
	items := func(ks []corev1.KeyToPath) map[string]string {
		m := map[string]string{}
		for _, k := range ks {
			m[k.Key] = k.Path
		}
		if len(m) == 0 {
			m = map[string]string{"kubeconfig": "kubeconfig", "token": "token"}
		}
		return m
	}
	var out []secretSource
	if v.Secret != nil {
		out = append(out, secretSource{secretName: v.Secret.SecretName, items: items(v.Secret.Items)})
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.Secret != nil {
				out = append(out, secretSource{secretName: s.Secret.Name, items: items(s.Secret.Items)})
			}
		}
	}
	return out
}

// kubeconfigFile is the path of the kubeconfig in a remote's volume.
const kubeconfigFile = "kubeconfig"

func loadKubeconfig(files map[string][]byte) (*clientcmdapi.Config, error) {
	raw, ok := files[kubeconfigFile]
	if !ok {
		return nil, fmt.Errorf("no kubeconfig in the volume")
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig does not parse: %w", err)
	}
	return kc, nil
}

// configFromFiles is the client configuration of the kubeconfig among files. The files it
// names (a token, a CA, a client certificate and key) are the pods' files: they are read from
// files (relative to the kubeconfig's directory, as client-go resolves them), never from this
// machine, and a kubeconfig naming one the volume does not hold is refused. So is one whose user
// would run something here (RunsHereError), unless opts allow it.
func configFromFiles(files map[string][]byte, opts CredentialOptions) (*rest.Config, error) {
	kc, err := loadKubeconfig(files)
	if err != nil {
		return nil, err
	}
	inVolume := func(name, file string) ([]byte, error) {
		data, ok := files[path.Clean(file)]
		if !ok {
			return nil, fmt.Errorf("%s reads %s, which the volume does not hold", name, file)
		}
		return data, nil
	}
	for name, cluster := range kc.Clusters {
		if cluster.CertificateAuthority != "" {
			if cluster.CertificateAuthorityData, err = inVolume("cluster "+name, cluster.CertificateAuthority); err != nil {
				return nil, err
			}
			cluster.CertificateAuthority = ""
		}
	}
	for name, user := range kc.AuthInfos {
		for _, f := range []struct {
			file *string
			data func([]byte)
		}{
			{&user.TokenFile, func(b []byte) { user.Token = string(b) }},
			{&user.ClientCertificate, func(b []byte) { user.ClientCertificateData = b }},
			{&user.ClientKey, func(b []byte) { user.ClientKeyData = b }},
		} {
			if *f.file == "" {
				continue
			}
			data, err := inVolume("user "+name, *f.file)
			if err != nil {
				return nil, err
			}
			f.data(data)
			*f.file = ""
		}
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	// Nothing has run yet: client-go runs these on the first request.
	if !opts.AllowExecPlugins {
		switch {
		case cfg.ExecProvider != nil:
			return nil, &RunsHereError{what: fmt.Sprintf("the exec credential plugin %q", cfg.ExecProvider.Command)}
		case cfg.AuthProvider != nil:
			return nil, &RunsHereError{what: fmt.Sprintf("the auth-provider %q", cfg.AuthProvider.Name)}
		}
	}
	return cfg, nil
}
