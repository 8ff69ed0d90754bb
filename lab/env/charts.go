package env

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The releases, as docs/charts.md installs them: semaphore-remote in a namespace of its own,
// the umbrella in the semaphore namespace (which also holds the mirrors).
const (
	RemoteRelease   = "semaphore-remote"
	RemoteNamespace = "semaphore-remote"
	UmbrellaRelease = "semaphore"
)

// WireGuardComponent is semaphore-wireguard's Controller.Component.
const WireGuardComponent = "semaphore-wireguard"

// WireGuardPorts are the UDP ports of the WireGuard devices, by remote (wireguard.listenPorts):
// one port per remote cluster, the same on every node.
var WireGuardPorts = map[string]int{"aws": 51821, "gcp": 51822, "merit": 51823}

// remoteEntry is one item of the umbrella's global.remotes, as kubectl semaphore link writes it.
type remoteEntry = map[string]any

// installRemoteCharts installs charts/semaphore-remote into every cluster with the helm CLI,
// from the lab's registry, with every other cluster as a consumer, and then links each consumer
// to each of its remotes as a user does, with `kubectl semaphore link`: the consumer's token
// copied into a Secret of its semaphore namespace, and the global.remotes entry written into a
// values file of the consumer's (.lab/clusters/<consumer>/remotes-values.yaml), whose entries
// go to the consumer's umbrella release (installUmbrellas).
func (l *Lab) installRemoteCharts(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, spec := range ClusterSpecs {
		consumers := []any{}
		for _, r := range RemotesOf(spec.Name) {
			// The consumers of the Calico-way cluster read its IPAM blocks.
			consumers = append(consumers, map[string]any{"name": r, "calicoIPAM": spec.Name == CalicoCluster})
		}
		m, err := l.helmInstall(ctx, spec.Name, RemoteRelease, RemoteRelease, RemoteNamespace, map[string]any{
			"clusterName": spec.Name,
			"apiServer":   l.PublicAPIServer(spec.Name),
			"consumers":   consumers,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		if err := os.WriteFile(l.Path("clusters", spec.Name, "semaphore-remote-NOTES.txt"), []byte(m.Release.Info.Notes), 0o644); err != nil {
			return err
		}
	}
	l.Logf("installed semaphore-remote in %s (helm install oci://%s/%s/%s)", strings.Join(ClusterNames(), ", "), l.registry, ChartsRepo, RemoteRelease)

	l.remoteEntries = map[string][]remoteEntry{}
	for _, consumer := range ClusterSpecs {
		values := l.Path("clusters", consumer.Name, "remotes-values.yaml")
		// A values file of a previous run would keep its entries.
		if err := os.Remove(values); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, remote := range RemotesOf(consumer.Name) {
			if err := l.link(ctx, remote, consumer.Name, values); err != nil {
				return err
			}
		}
		entries, err := readRemotes(values)
		if err != nil {
			return err
		}
		l.remoteEntries[consumer.Name] = entries
	}
	l.Logf("linked every consumer to its remotes with kubectl semaphore link (%s)", l.Path("clusters", "*", "remotes-values.yaml"))
	return nil
}

// readRemotes reads global.remotes of the values file path.
func readRemotes(path string) ([]remoteEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var values struct {
		Global struct {
			Remotes []remoteEntry `json:"remotes"`
		} `json:"global"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return values.Global.Remotes, nil
}

// installUmbrellas installs charts/semaphore into every cluster with the helm CLI, from the lab's registry, with the
// remotes kubectl semaphore link gave (installRemoteCharts) and the lab's settings (umbrellaValues). The
// controllers then run with what it renders (podOf).
func (l *Lab) installUmbrellas(ctx context.Context) error {
	for _, spec := range ClusterSpecs {
		m, err := l.helmInstall(ctx, spec.Name, UmbrellaRelease, UmbrellaRelease, SemaphoreNamespace, l.umbrellaValues(spec.Name))
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		if err := os.WriteFile(l.Path("clusters", spec.Name, "semaphore-manifest.yaml"), []byte(m.Release.Manifest), 0o644); err != nil {
			return err
		}
	}
	l.Logf("installed the umbrella chart in %s (helm install oci://%s/%s/%s; rendered manifests in %s)",
		strings.Join(ClusterNames(), ", "), l.registry, ChartsRepo, UmbrellaRelease, l.Path("clusters", "*", "semaphore-manifest.yaml"))
	return nil
}

// umbrellaValues are the umbrella's values for cluster: its name and remotes (each with its pod
// range), and what the lab changes from the defaults (podCIDRsFrom: calico-ipam for the
// Calico-way cluster; per-remote limits small enough for the hostile remote to go over).
// Everything else is the chart's default.
func (l *Lab) umbrellaValues(cluster string) map[string]any {
	listenPorts := map[string]any{}
	for _, r := range RemotesOf(cluster) {
		listenPorts[r] = WireGuardPorts[r]
	}
	remotes := make([]any, len(l.remoteEntries[cluster]))
	for i, e := range l.remoteEntries[cluster] {
		// Each remote held to its own pod range: semaphore-wireguard routes nothing else of it.
		entry := maps.Clone(e)
		name, _ := e["name"].(string)
		entry["podRanges"] = []any{SpecOf(name).PodCIDR}
		remotes[i] = entry
	}
	wireguard := map[string]any{
		"listenPorts": listenPorts,
		// Handshakes every few seconds instead of 25: the lab shows them while you watch.
		"keepalive": "5s",
		// As many peers per remote as it has nodes: the hostile remote's fake nodes
		// (lab/scenarios) are beyond it.
		"maxPeersPerRemote": NodesPerCluster,
	}
	if SpecOf(cluster).Network.NAT == SourceNAT {
		// Its nodes have no public address and no way in: they publish none, and open the
		// tunnels themselves (the other side learns their address from their handshakes).
		wireguard["endpointAddressTypes"] = "ExternalIP"
	}
	if cluster != CalicoCluster {
		// The Calico-way cluster's pod addresses are in its IPAM blocks (calico.go).
		wireguard["podCIDRsFrom"] = map[string]any{CalicoCluster: "calico-ipam"}
	}
	return map[string]any{
		"global": map[string]any{
			"clusterName": cluster,
			"remotes":     remotes,
			// The images the lab built, in its registry: the one value that moves them.
			"image": map[string]any{"registry": l.registry + "/" + ImagesRepo},
		},
		// The mirrors go to the release namespace; the chart then leaves the namespace alone.
		"serviceMirror": map[string]any{
			"mirrorNamespace": map[string]any{"name": SemaphoreNamespace},
			// Small, so that the hostile remote (lab/scenarios) goes over it with a few dozen
			// Services; the lab's own mirror a handful per remote.
			"maxServicesPerRemote": HostileMirrorCap,
		},
		"policy":    map[string]any{"calicoAPI": CalicoAPI},
		"wireguard": wireguard,
	}
}
