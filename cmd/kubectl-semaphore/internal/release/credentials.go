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

// Remote returns the credentials the component's pods have for remote name: the files of
// their volume remote-<name> (the chart projects a kubeconfig, and a token it refers to, into
// <SEMAPHORE_REMOTES_DIR>/<name>/).
func (c Component) Remote(ctx context.Context, client kubernetes.Interface, name string) (Remote, error) {
	r := Remote{Name: name}
	vol := c.volume("remote-" + name)
	if vol == nil {
		return r, fmt.Errorf("%s %s/%s has no volume remote-%s with the credentials of remote %s", c.Kind, c.Namespace, c.Workload, name, name)
	}
	files := map[string][]byte{}
	for _, src := range secretSources(vol) {
		s, err := client.CoreV1().Secrets(c.Namespace).Get(ctx, src.SecretName, metav1.GetOptions{})
		if err != nil {
			return r, fmt.Errorf("remote %s: reading Secret %s/%s the pods mount: %w", name, c.Namespace, src.SecretName, err)
		}
		r.Secrets = append(r.Secrets, c.Namespace+"/"+src.SecretName)
		for key, p := range src.Items {
			if v, ok := s.Data[key]; ok {
				files[p] = v
			}
		}
	}
	cfg, err := configFromFiles(files)
	if err != nil {
		return r, fmt.Errorf("remote %s (Secrets %v): %w", name, r.Secrets, err)
	}
	r.Config = cfg
	return r, nil
}

// Remotes returns the credentials of every remote the component reads.
func (c Component) Remotes(ctx context.Context, client kubernetes.Interface) ([]Remote, []error) {
	var out []Remote
	var errs []error
	for _, name := range c.RemoteNames() {
		r, err := c.Remote(ctx, client, name)
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
	SecretName string
	Items      map[string]string
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
		out = append(out, secretSource{SecretName: v.Secret.SecretName, Items: items(v.Secret.Items)})
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.Secret != nil {
				out = append(out, secretSource{SecretName: s.Secret.Name, Items: items(s.Secret.Items)})
			}
		}
	}
	return out
}

// configFromFiles is the client configuration of the kubeconfig among files, with a token file
// it names (relative to the kubeconfig's directory, as client-go resolves it) read from files.
func configFromFiles(files map[string][]byte) (*rest.Config, error) {
	raw, ok := files["kubeconfig"]
	if !ok {
		return nil, fmt.Errorf("no kubeconfig in the volume")
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig does not parse: %w", err)
	}
	for name, user := range kc.AuthInfos {
		if user.TokenFile == "" {
			continue
		}
		token, ok := files[path.Clean(user.TokenFile)]
		if !ok {
			return nil, fmt.Errorf("user %s reads token file %s, which the volume does not hold", name, user.TokenFile)
		}
		user.Token, user.TokenFile = string(token), ""
	}
	return clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
}
