package helmchart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

// Pod is what the kubelet knows of one pod of a workload when it resolves its environment.
type Pod struct {
	Name, Namespace, Node string
	// HostIP and IP answer status.hostIP and status.podIP.
	HostIP, IP string
}

// Env resolves the environment of container c of w's pod p as the kubelet would: literal
// values, with $(VAR) references to variables set before them expanded, and the downward API's
// fields. Values from ConfigMaps or Secrets and envFrom are not
// used by these charts and are reported; so is a variable set twice.
func Env(w Workload, c corev1.Container, p Pod) (map[string]string, error) {
	var errs []error
	if len(c.EnvFrom) > 0 {
		errs = append(errs, fmt.Errorf("%s %s: envFrom is not expected", w.Kind, w.Name))
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			errs = append(errs, fmt.Errorf("%s %s: %s is set twice", w.Kind, w.Name, e.Name))
		}
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandEarlier(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = p.Name
			case "metadata.namespace":
				env[e.Name] = p.Namespace
			case "spec.nodeName":
				env[e.Name] = p.Node
			case "spec.serviceAccountName":
				env[e.Name] = w.Pod.Spec.ServiceAccountName
			case "status.hostIP":
				env[e.Name] = p.HostIP
			case "status.podIP":
				env[e.Name] = p.IP
			default:
				errs = append(errs, fmt.Errorf("%s %s: %s from field %s: not expected", w.Kind, w.Name, e.Name, e.ValueFrom.FieldRef.FieldPath))
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "1"
		default:
			errs = append(errs, fmt.Errorf("%s %s: %s comes from a ConfigMap or Secret: not expected", w.Kind, w.Name, e.Name))
		}
	}
	return env, errors.Join(errs...)
}

// varRef is a $(VAR) reference in an env value.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandEarlier expands $(VAR) references to variables already set, and leaves the others as
// they are, as the kubelet does.
func expandEarlier(value string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(value, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// ProjectedFile is a file of a Secret or projected volume: which key of which Secret, with
// which mode.
type ProjectedFile struct {
	Secret, Key string
	Mode        int32
}

// VolumeFiles lists the files of a Secret or projected volume, by path in the volume; a source
// without items must be a Secret of the release (m), whose keys are known.
func VolumeFiles(m *Manifest, v corev1.Volume) (map[string]ProjectedFile, error) {
	out := map[string]ProjectedFile{}
	var errs []error
	add := func(secret string, items []corev1.KeyToPath, defaultMode int32) {
		if len(items) == 0 {
			s := m.Get("Secret", secret)
			if s == nil {
				errs = append(errs, fmt.Errorf("volume %s projects every key of Secret %s, which the release does not render", v.Name, secret))
				return
			}
			data, err := SecretData(s)
			if err != nil {
				errs = append(errs, err)
				return
			}
			for k := range data {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			if _, dup := out[it.Path]; dup {
				errs = append(errs, fmt.Errorf("volume %s: file %s projected twice", v.Name, it.Path))
			}
			out[it.Path] = ProjectedFile{Secret: secret, Key: it.Key, Mode: ptr.Deref(it.Mode, defaultMode)}
		}
	}
	switch {
	case v.Projected != nil:
		mode := ptr.Deref(v.Projected.DefaultMode, 0o644)
		for _, s := range v.Projected.Sources {
			if s.Secret == nil {
				errs = append(errs, fmt.Errorf("volume %s: a projected source other than a Secret: %+v", v.Name, s))
				continue
			}
			add(s.Secret.Name, s.Secret.Items, mode)
		}
	case v.Secret != nil:
		add(v.Secret.SecretName, v.Secret.Items, ptr.Deref(v.Secret.DefaultMode, 0o644))
	default:
		errs = append(errs, fmt.Errorf("volume %s is neither a Secret nor a projected volume", v.Name))
	}
	return out, errors.Join(errs...)
}

// SecretData returns a rendered Secret's data, decoded, stringData included.
func SecretData(s *unstructured.Unstructured) (map[string][]byte, error) {
	sec, err := Typed[corev1.Secret](s)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(sec.Data)
	if out == nil {
		out = map[string][]byte{}
	}
	for k, v := range sec.StringData {
		out[k] = []byte(v)
	}
	return out, nil
}

// WriteVolume writes the files of a Secret or projected volume v of release m into dir, as the
// kubelet would mount it, reading each Secret once from secrets (the pod's namespace). Every
// file keeps its mode and is readable by its owner, the user who runs the pod here.
func WriteVolume(ctx context.Context, secrets corev1client.SecretInterface, m *Manifest, v corev1.Volume, dir string) error {
	files, err := VolumeFiles(m, v)
	if err != nil {
		return err
	}
	read := map[string]*corev1.Secret{}
	for name, f := range files {
		s, ok := read[f.Secret]
		if !ok {
			if s, err = secrets.Get(ctx, f.Secret, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("the kubelet could not mount volume %s: %w", v.Name, err)
			}
			read[f.Secret] = s
		}
		data, ok := s.Data[f.Key]
		if !ok {
			return fmt.Errorf("the kubelet could not mount volume %s: Secret %s has no key %s", v.Name, f.Secret, f.Key)
		}
		file := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, data, os.FileMode(f.Mode)|0o400); err != nil {
			return err
		}
	}
	return nil
}
