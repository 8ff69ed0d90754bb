package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/tooling/dist"
	"github.com/kube-semaphore/semaphore/lab/guide"
	"github.com/kube-semaphore/semaphore/lab/layout"
)

// installWithGuide installs both charts into every cluster and links the clusters by running
// the shell blocks of the getting-started guide verbatim, up to its check, as its reader does:
// from a workstation on the internet (inside the lab's internet, with the API servers at their
// published addresses), with the variables the guide asks the reader to set and the values
// file of the reader's own settings (labValues). Then it keeps each release's NOTES and
// manifest where the status says they are.
func (l *Lab) installWithGuide(ctx context.Context) error {
	runner, err := l.guideRunner("guide-install.log")
	if err != nil {
		return err
	}
	for _, cluster := range layout.ClusterNames() {
		values := l.labValues(cluster)
		// The images by tag and the digest the lab pushed and signed, as users install a release.
		if err := l.labRelease.PinDigests(ctx, values); err != nil {
			return err
		}
		data, err := yaml.Marshal(values)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(runner.Dir, "my-values-"+cluster+".yaml"), data, 0o644); err != nil {
			return err
		}
	}
	runner.Select = func(b guide.Block) bool { return b.Section != layout.GuideCheckSection }
	if err := runner.Run(ctx, filepath.Join(testbed.RepoRoot(), layout.GuideFile)); err != nil {
		return fmt.Errorf("following %s (its output in %s): %w", layout.GuideFile, l.Path("logs", "guide-install.log"), err)
	}
	l.Logf("followed %s: semaphore-remote and the umbrella chart in %s, every pair linked both ways (commands and output in %s)",
		layout.GuideFile, strings.Join(layout.ClusterNames(), ", "), l.Path("logs", "guide-install.log"))
	return l.keepReleases(ctx)
}

// RunGuideCheck runs the getting-started guide's check section, as its reader would after the
// install, with its output in logs/guide-check.log.
func (l *Lab) RunGuideCheck(ctx context.Context) error {
	runner, err := l.guideRunner("guide-check.log")
	if err != nil {
		return err
	}
	runner.Select = func(b guide.Block) bool { return b.Section == layout.GuideCheckSection }
	return runner.Run(ctx, filepath.Join(testbed.RepoRoot(), layout.GuideFile))
}

// guideRunner runs the guide's blocks in the lab's guide directory, with their output in
// logs/<log> (appended).
func (l *Lab) guideRunner(log string) (guide.Runner, error) {
	dir := l.Path(layout.GuideDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return guide.Runner{}, err
	}
	env, err := l.guideEnv()
	if err != nil {
		return guide.Runner{}, err
	}
	out, err := os.OpenFile(l.Path("logs", log), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return guide.Runner{}, err
	}
	l.onTeardown(func() { out.Close() })
	r := guide.Runner{Dir: dir, Env: env, Out: out}
	if l.NodesRun() {
		r.Netns = layout.InternetNetns
	}
	return r, nil
}

// guideEnv is the environment of the guide's commands: what the guide asks its reader to set
// (the charts in the lab's registry, each cluster's API server and pod range), a kubeconfig
// with a context per cluster, and a PATH with helm, kubectl-semaphore and a kubectl that runs
// it (guideBin). Without nodes there is no internet: the API servers are at their loopback
// addresses.
func (l *Lab) guideEnv() ([]string, error) {
	bin, err := l.guideBin()
	if err != nil {
		return nil, err
	}
	kubeconfig := l.Path(layout.KubeconfigFile)
	server := func(cluster string) string { return l.clusters[cluster].Config.Host }
	if l.NodesRun() {
		if kubeconfig, err = l.WorkstationKubeconfig(); err != nil {
			return nil, err
		}
		server = l.PublicAPIServer
	}
	home := l.Path("tmp", "helm")
	env := []string{
		"PATH=" + bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home,
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		"KUBECONFIG=" + kubeconfig,
		"CHARTS=oci://" + l.registry + "/" + layout.ChartsRepo,
		"CHART_FLAGS=--plain-http --version " + dist.ChartVersion(l.labRelease.Version),
	}
	for _, c := range layout.ClusterSpecs {
		upper := strings.ToUpper(c.Name)
		env = append(env, upper+"_API_SERVER="+server(c.Name), upper+"_POD_RANGES="+c.PodCIDR)
		if lb := c.Network.LoadBalancerAddr; lb != "" {
			env = append(env, upper+"_LOAD_BALANCER="+lb)
		}
	}
	return env, nil
}

// kubectlShim is the lab's kubectl: the guide runs `kubectl semaphore ...`, which kubectl
// hands to its plugin kubectl-semaphore; the lab builds no kubectl, and its shim does that
// only.
const kubectlShim = `#!/bin/sh
# The lab's kubectl: it runs the plugin only, as kubectl does for "kubectl semaphore ...".
if [ "$1" != semaphore ]; then
	echo "the lab's kubectl runs its plugin only: kubectl semaphore ..." >&2
	exit 1
fi
shift
exec kubectl-semaphore "$@"
`

// guideBin makes the directory of the guide's programs: helm, kubectl-semaphore and the
// kubectl shim.
func (l *Lab) guideBin() (string, error) {
	dir := l.Path("tmp", "guide-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, target := range map[string]string{"helm": l.bin.helm, "kubectl-semaphore": l.bin.plugin} {
		link := filepath.Join(dir, name)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "kubectl"), []byte(kubectlShim), 0o755)
}

// keepReleases writes each cluster's semaphore-remote NOTES and the umbrella's manifest into
// the cluster's directory, as the status says.
func (l *Lab) keepReleases(ctx context.Context) error {
	for _, cluster := range layout.ClusterNames() {
		remote, err := l.release(ctx, cluster, layout.RemoteRelease, layout.RemoteNamespace)
		if err != nil {
			return err
		}
		umbrella, err := l.release(ctx, cluster, layout.UmbrellaRelease, layout.SemaphoreNamespace)
		if err != nil {
			return err
		}
		dir := l.Path("clusters", cluster)
		if err := os.WriteFile(filepath.Join(dir, "semaphore-remote-NOTES.txt"), []byte(remote.Release.Info.Notes), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "semaphore-manifest.yaml"), []byte(umbrella.Release.Manifest), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ListenPort is the UDP port of cluster's WireGuard device for remote, as kubectl semaphore
// link wrote it into cluster's values (wireguard.listenPorts).
func (l *Lab) ListenPort(cluster, remote string) (int, error) {
	path := l.Path(layout.GuideDir, "semaphore-values", cluster+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var values struct {
		WireGuard struct {
			ListenPorts map[string]int `json:"listenPorts"`
		} `json:"wireguard"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	port, ok := values.WireGuard.ListenPorts[remote]
	if !ok {
		return 0, fmt.Errorf("%s: no wireguard.listenPorts.%s", path, remote)
	}
	return port, nil
}

// labValues are the lab's own settings of the umbrella chart in cluster, what the guide calls
// the reader's own (my-values-<cluster>.yaml): the images from the lab's registry, and what
// the lab changes from the defaults to show more, sooner. Everything else comes from the
// guide: the cluster's name, its remotes and their ports (kubectl semaphore link), where the
// aws pod addresses come from, merit's endpoints.
func (l *Lab) labValues(string) map[string]any {
	return map[string]any{
		"global": map[string]any{
			// The images the lab built, in its registry: the one value that moves them.
			"image": map[string]any{"registry": l.registry + "/" + layout.ImagesRepo},
		},
		// The mirrors go to the release namespace; the chart then leaves the namespace alone.
		"serviceMirror": map[string]any{
			"mirrorNamespace": map[string]any{"name": layout.SemaphoreNamespace},
			// Small, so that the hostile remote (lab/scenarios) goes over it with a few dozen
			// Services; the lab's own mirror a handful per remote.
			"maxServicesPerRemote": layout.HostileMirrorCap,
			// The Multi-Cluster Services API, off by default (docs/mcs.md): the conformance
			// suite runs against the lab.
			"mcs": map[string]any{"enabled": true},
		},
		"policy": map[string]any{"calicoAPI": layout.CalicoAPI},
		"wireguard": map[string]any{
			// Handshakes every few seconds instead of 25: the lab shows them while you watch.
			"keepalive": "5s",
			// As many peers per remote as it has nodes: the hostile remote's fake nodes
			// (lab/scenarios) are beyond it.
			"maxPeersPerRemote": layout.NodesPerCluster,
		},
	}
}
