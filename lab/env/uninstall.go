package env

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/node"
)

// Uninstalling a cluster as docs/charts.md tells users, and what the lab then finds left of
// Semaphore in that cluster and on its nodes.

// UninstallCluster uninstalls cluster's umbrella release, whose pre-delete hooks have every
// component remove what it made, waiting for its resources to go; has `kubectl semaphore
// unlink` remove the remotes' tokens link wrote into it; and uninstalls its semaphore-remote
// release, which revokes the tokens it made for the consumers.
func (l *Lab) UninstallCluster(ctx context.Context, cluster string) error {
	target := []string{"--kubeconfig", l.Path(layout.KubeconfigFile), "--kube-context", cluster, "--wait", "--timeout", "5m"}
	if _, err := l.helm(ctx, append([]string{"uninstall", layout.UmbrellaRelease, "-n", layout.SemaphoreNamespace}, target...)...); err != nil {
		return err
	}
	for _, remote := range layout.ClusterNames() {
		if remote == cluster {
			continue
		}
		// The plugin calls only the API server of --to, at the lab kubeconfig's address.
		cmd := exec.CommandContext(ctx, l.bin.plugin, "--kubeconfig", l.Path(layout.KubeconfigFile), "unlink", "--to", cluster, "--remote-name", remote)
		out, err := cmd.CombinedOutput()
		l.appendLog("plugin.log", strings.Join(cmd.Args, " "), string(out))
		if err != nil {
			return fmt.Errorf("kubectl semaphore unlink --to %s --remote-name %s: %w: %s", cluster, remote, err, out)
		}
	}
	_, err := l.helm(ctx, append([]string{"uninstall", layout.RemoteRelease, "-n", layout.RemoteNamespace}, target...)...)
	return err
}

// InstallAgain installs and links every cluster again by following the getting-started guide,
// as after a first install: what is there already is left as it is.
func (l *Lab) InstallAgain(ctx context.Context) error { return l.installWithGuide(ctx) }

// ConsumerToken is the token consumer holds for reading remote: what link wrote into the
// Secret semaphore-remote-<remote> of consumer's semaphore namespace.
func (l *Lab) ConsumerToken(ctx context.Context, consumer, remote string) (string, error) {
	s, err := l.Cluster(consumer).Client.CoreV1().Secrets(layout.SemaphoreNamespace).Get(ctx, "semaphore-remote-"+remote, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return string(s.Data["token"]), nil
}

// TokenAccepted reports whether cluster's API server authenticates token.
func (l *Lab) TokenAccepted(ctx context.Context, cluster, token string) (bool, error) {
	cfg := rest.AnonymousClientConfig(l.Cluster(cluster).Config)
	cfg.BearerToken = token
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	_, err = client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if apierrors.IsUnauthorized(err) {
		return false, nil
	}
	return err == nil, err
}

// Leftovers are what is left of Semaphore in cluster and on its nodes: objects that carry a
// component's managed-by label, anything in the releases' namespaces but what Kubernetes puts
// in every namespace, and on each node WireGuard devices and routes of ours, key files and
// Node annotations of ours.
func (l *Lab) Leftovers(ctx context.Context, cluster string) ([]string, error) {
	left, err := l.objectsLeft(ctx, cluster)
	if err != nil {
		return nil, err
	}
	keyDir, err := wireguardKeyDir()
	if err != nil {
		return nil, err
	}
	var nodes []layout.Node
	if rec := l.Record().Nodes; rec != nil {
		nodes = rec.Nodes
	}
	for _, n := range nodes {
		if n.Cluster != cluster {
			continue
		}
		nodeLeft, err := l.nodeLeftovers(ctx, n, keyDir)
		if err != nil {
			return nil, err
		}
		left = append(left, nodeLeft...)
	}
	return left, nil
}

// componentsSelector selects the objects any component made.
var componentsSelector = ownership.ManagedBy + " in (" + strings.Join([]string{ownership.ServiceMirror, ownership.Policy, ownership.WireGuard}, ",") + ")"

// objectsLeft lists every resource cluster serves: the objects of the components anywhere,
// and every object of the releases' namespaces.
func (l *Lab) objectsLeft(ctx context.Context, cluster string) ([]string, error) {
	// Listing every resource lists deprecated ones too: their warnings say nothing here.
	cfg := rest.CopyConfig(l.Cluster(cluster).Config)
	cfg.WarningHandler = rest.NoWarnings{}
	// About three LISTs per resource, some 250 in all: client-go's default limit (5 a second)
	// made one search take half a minute, and the wait for nothing left only two searches.
	cfg.QPS, cfg.Burst = -1, 0
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A group whose discovery failed (an aggregated API down) is named, and the others are
	// still searched.
	lists, err := disco.ServerPreferredResources()
	var left []string
	if discovery.IsGroupDiscoveryFailedError(err) {
		left = append(left, fmt.Sprintf("%s: not searched: %v", cluster, err))
	} else if err != nil {
		return nil, err
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			if !canList(r) || r.Name == "events" {
				continue
			}
			res := dyn.Resource(gv.WithResource(r.Name))
			found, err := res.List(ctx, metav1.ListOptions{LabelSelector: componentsSelector})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, o := range found.Items {
				left = append(left, fmt.Sprintf("%s %s %s/%s of %s", cluster, r.Kind, o.GetNamespace(), o.GetName(), o.GetLabels()[ownership.ManagedBy]))
			}
			if !r.Namespaced {
				continue
			}
			for _, ns := range []string{layout.SemaphoreNamespace, layout.RemoteNamespace} {
				all, err := res.Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, fmt.Errorf("listing %s in %s: %w", r.Name, ns, err)
				}
				for _, o := range all.Items {
					if !inEveryNamespace(r.Kind, o.GetName()) {
						left = append(left, fmt.Sprintf("%s %s %s/%s", cluster, r.Kind, ns, o.GetName()))
					}
				}
			}
		}
	}
	return left, nil
}

// canList reports whether r can be listed.
func canList(r metav1.APIResource) bool {
	for _, v := range r.Verbs {
		if v == "list" {
			return true
		}
	}
	return false
}

// inEveryNamespace reports whether Kubernetes makes the object kind/name in every namespace.
func inEveryNamespace(kind, name string) bool {
	return (kind == "ConfigMap" && name == "kube-root-ca.crt") || (kind == "ServiceAccount" && name == "default")
}

// nodeLeftovers are, on node n, the WireGuard devices by our prefix, the routes of ours, the
// key files in its key directory and the annotations of ours on its Node.
func (l *Lab) nodeLeftovers(ctx context.Context, n layout.Node, keyDir string) ([]string, error) {
	var left []string
	links, err := exec.CommandContext(ctx, "ip", "netns", "exec", n.Netns, "ip", "-o", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("links of %s: %w", n.Name, err)
	}
	for _, line := range strings.Split(string(links), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], peers.DevicePrefix) {
			left = append(left, fmt.Sprintf("%s: device %s", n.Name, strings.TrimSuffix(f[1], ":")))
		}
	}
	routes, err := exec.CommandContext(ctx, "ip", "netns", "exec", n.Netns, "ip", "route", "show", "table", "all", "proto", strconv.Itoa(int(device.RouteProtocol))).Output()
	if err != nil {
		return nil, fmt.Errorf("routes of %s: %w", n.Name, err)
	}
	for _, r := range strings.Split(strings.TrimSpace(string(routes)), "\n") {
		if r != "" {
			left = append(left, fmt.Sprintf("%s: route %s", n.Name, r))
		}
	}
	keys, err := filepath.Glob(filepath.Join(node.HostPath(n.Dir, keyDir), "*"))
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		left = append(left, fmt.Sprintf("%s: file %s", n.Name, filepath.Join(keyDir, filepath.Base(k))))
	}
	obj, err := l.Cluster(n.Cluster).Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for k := range obj.Annotations {
		if peers.IsOwnAnnotation(k) {
			left = append(left, fmt.Sprintf("%s: annotation %s", n.Name, k))
		}
	}
	return left, nil
}
