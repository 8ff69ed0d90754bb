package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/internal/charts"
)

// labPod is one pod of an umbrella workload as the lab runs it: a process with the container's
// environment as the chart renders it, and its volumes as files under Root.
type labPod struct {
	Name string
	// Env is the container's environment (NAME=value), resolved as the kubelet would, with the
	// changes podOf describes.
	Env []string
	// Root stands for the container's filesystem: a volume mounted at /x is Root/x.
	Root string
	// Admin is the admin server's address (SEMAPHORE_ADMIN_ADDR).
	Admin string
	// Lease is the leader-election Lease's name, when the pod elects a leader.
	Lease string
	// Kubeconfig and RemotesDir are where the pod's credentials are: its in-cluster
	// configuration (SEMAPHORE_LOCAL_KUBECONFIG) and its remotes' kubeconfigs
	// (SEMAPHORE_REMOTES_DIR), moved under Root.
	Kubeconfig, RemotesDir string
	// FixedMounts are the container's mounts at paths the program uses as they are, which its
	// runner must provide: /dev/net/tun (the host's) and /var/run/wireguard (a private
	// directory per node, see the nodes' mount namespaces).
	FixedMounts []string
}

// serviceAccountDir is where a pod finds its ServiceAccount's token and CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// podOf prepares a pod of component's workload in cluster's umbrella release: for a DaemonSet
// the pod on node, for a Deployment its replica-th pod (which the lab runs on this machine's
// network; node is then empty). It does what the
// kubelet does for a pod, and the little a process on this machine needs instead of a container:
//
//   - the environment is the container's, rendered by the chart, with the downward API's
//     fields resolved;
//   - every Secret and projected volume is written from the cluster's Secrets under Root, and
//     every hostPath volume is a directory of the node's under the lab directory; variables
//     whose value is a path inside a mount (SEMAPHORE_REMOTES_DIR, SEMAPHORE_WG_KEY_DIR) are
//     moved under Root with it;
//   - the in-cluster configuration, which needs a pod's service environment, is a kubeconfig
//     (SEMAPHORE_LOCAL_KUBECONFIG) with a token of the pod's ServiceAccount from the
//     TokenRequest API, read from Root's ServiceAccount directory as client-go reads it in a pod;
//   - a pod off the host network has a network namespace of its own, and so a port of its own;
//     here those pods share this machine's, so the admin server moves to a free port on
//     127.0.0.1.
//
// Nothing else is changed: what the chart gets wrong, the lab gets wrong too.
func (l *lab) podOf(ctx context.Context, cluster, component, node string, replica int) (*labPod, error) {
	m := l.umbrellas[cluster]
	if m == nil {
		return nil, fmt.Errorf("no umbrella release in %s", cluster)
	}
	w, err := m.Workload(component)
	if err != nil {
		return nil, err
	}
	if len(w.Pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%s %s has %d containers, want 1", w.Kind, w.Name, len(w.Pod.Spec.Containers))
	}
	ctr := w.Pod.Spec.Containers[0]
	name := fmt.Sprintf("%s-%d", w.Name, replica)
	if node != "" {
		name = w.Name + "-" + node
	}
	p := &labPod{Name: name, Root: l.path("pods", cluster, name)}
	if err := os.RemoveAll(p.Root); err != nil {
		return nil, err
	}

	env, err := charts.Env(w, ctr, charts.Pod{Name: name, Namespace: semaphoreNamespace, Node: node})
	if err != nil {
		return nil, err
	}
	if err := l.mountVolumes(ctx, cluster, m, w, ctr, node, p); err != nil {
		return nil, fmt.Errorf("%s %s: %w", w.Kind, w.Name, err)
	}
	for k, v := range env {
		if p.insideMount(ctr, v) {
			env[k] = filepath.Join(p.Root, v)
		}
	}

	if v, ok := env["SEMAPHORE_LOCAL_KUBECONFIG"]; ok {
		return nil, fmt.Errorf("%s %s sets SEMAPHORE_LOCAL_KUBECONFIG=%q; in a pod the in-cluster configuration is the ServiceAccount's", w.Kind, w.Name, v)
	}
	kubeconfig, err := l.serviceAccountKubeconfig(ctx, cluster, w.Pod.Spec.ServiceAccountName, p.Root)
	if err != nil {
		return nil, err
	}
	env["SEMAPHORE_LOCAL_KUBECONFIG"] = kubeconfig
	p.Kubeconfig, p.RemotesDir = kubeconfig, env["SEMAPHORE_REMOTES_DIR"]

	if env["SEMAPHORE_LEADER_ELECT"] == "true" {
		p.Lease = env["SEMAPHORE_LEADER_ELECT_LEASE_NAME"]
	}
	p.Admin = env["SEMAPHORE_ADMIN_ADDR"]
	if !w.Pod.Spec.HostNetwork {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.Admin = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		env["SEMAPHORE_ADMIN_ADDR"] = p.Admin
	}
	for k, v := range env {
		p.Env = append(p.Env, k+"="+v)
	}
	slices.Sort(p.Env)
	return p, nil
}

// fixedPath tells the mounts that podOf leaves where they are: devices, and the runtime
// directory the program's libraries use at a fixed place (userspace WireGuard's sockets).
func fixedPath(mountPath string) bool {
	for _, dir := range []string{"/dev", "/var/run", "/run"} {
		if mountPath == dir || strings.HasPrefix(mountPath, dir+"/") {
			return true
		}
	}
	return false
}

// insideMount tells whether value is a path inside, or above, one of ctr's relocated mounts:
// a path the program would open in the container's filesystem.
func (p *labPod) insideMount(ctr corev1.Container, value string) bool {
	if !path.IsAbs(value) {
		return false
	}
	value = path.Clean(value)
	for _, vm := range ctr.VolumeMounts {
		mp := path.Clean(vm.MountPath)
		if fixedPath(mp) {
			continue
		}
		if value == mp || strings.HasPrefix(value, mp+"/") || strings.HasPrefix(mp, value+"/") {
			return true
		}
	}
	return false
}

// mountVolumes writes ctr's volumes under p.Root as the kubelet would mount them.
func (l *lab) mountVolumes(ctx context.Context, cluster string, m *charts.Manifest, w charts.Workload, ctr corev1.Container, node string, p *labPod) error {
	volumes := map[string]corev1.Volume{}
	for _, v := range w.Pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range ctr.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return fmt.Errorf("mount %s: no volume %s", vm.MountPath, vm.Name)
		}
		if fixedPath(path.Clean(vm.MountPath)) {
			p.FixedMounts = append(p.FixedMounts, path.Clean(vm.MountPath))
			continue
		}
		dir := filepath.Join(p.Root, vm.MountPath)
		switch {
		case v.Secret != nil || v.Projected != nil:
			if err := charts.WriteVolume(ctx, l.clusters[cluster].Client.CoreV1().Secrets(semaphoreNamespace), m, v, dir); err != nil {
				return err
			}
		case v.HostPath != nil:
			if node == "" {
				return fmt.Errorf("hostPath volume %s in a pod without a node", v.Name)
			}
			// The node's filesystem is a directory of the lab; the pod sees the node's
			// directory through a symbolic link.
			hostDir := l.path("nodes", node, "root", v.HostPath.Path)
			if err := os.MkdirAll(hostDir, 0o700); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hostDir, dir); err != nil {
				return err
			}
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
		default:
			return fmt.Errorf("volume %s: a kind of volume the lab cannot mount", v.Name)
		}
	}
	return nil
}

// serviceAccountKubeconfig writes, under root, what a pod of sa finds in its ServiceAccount
// directory (a token from the TokenRequest API, the CA, the namespace) and a kubeconfig that
// reads them there, as client-go's in-cluster configuration does (re-reading the token file).
func (l *lab) serviceAccountKubeconfig(ctx context.Context, cluster, sa, root string) (string, error) {
	c := l.clusters[cluster]
	tr, err := c.Client.CoreV1().ServiceAccounts(semaphoreNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token for ServiceAccount %s/%s: %w", semaphoreNamespace, sa, err)
	}
	dir := filepath.Join(root, serviceAccountDir)
	for name, data := range map[string][]byte{
		corev1.ServiceAccountTokenKey:     []byte(tr.Status.Token),
		corev1.ServiceAccountRootCAKey:    c.Config.CAData,
		corev1.ServiceAccountNamespaceKey: []byte(semaphoreNamespace),
	} {
		if err := writeFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: apiServer(c), CertificateAuthority: filepath.Join(dir, corev1.ServiceAccountRootCAKey)}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, corev1.ServiceAccountTokenKey)}
	kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: sa, Namespace: semaphoreNamespace}
	kc.CurrentContext = cluster
	path := filepath.Join(root, "in-cluster-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, nil
}

func writeFile(name string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, mode)
}

// replicas is how many pods component's Deployment in cluster's umbrella release asks for.
func (l *lab) replicas(cluster, component string) (int, error) {
	w, err := l.umbrellas[cluster].Workload(component)
	if err != nil {
		return 0, err
	}
	if w.Replicas == nil {
		return 1, nil // the API server's default
	}
	return int(*w.Replicas), nil
}
