package link_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/link"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// installRemote installs semaphore-remote in c, the cluster named like c, for consumers, or
// upgrades it to them.
func installRemote(t *testing.T, c *testenv.Cluster, consumers ...string) {
	t.Helper()
	var list []any
	for _, name := range consumers {
		list = append(list, map[string]any{"name": name})
	}
	cfg, err := helmchart.Config(c.DirectKubeconfig, remoteNamespace, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testbed.RepoRoot(), helmchart.RemoteDir)
	vals := map[string]any{"clusterName": c.Name, "apiServer": c.Config.Host, "consumers": list}
	if _, err := helmchart.Upgrade(cfg, dir, "semaphore-remote", remoteNamespace, vals); err != nil {
		if _, err := helmchart.Install(cfg, dir, "semaphore-remote", remoteNamespace, vals); err != nil {
			t.Fatal(err)
		}
	}
}

// umbrellaValues reads the values file path of the consumer's umbrella release.
func umbrellaValues(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(data, &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// listenPortsEnv renders the umbrella chart with the values file path alone, as `helm install
// -f path` would, and returns semaphore-wireguard's SEMAPHORE_WG_LISTEN_PORTS.
func listenPortsEnv(t *testing.T, path string) string {
	t.Helper()
	rel, err := helmchart.Render(filepath.Join(testbed.RepoRoot(), helmchart.UmbrellaDir), "semaphore", "semaphore", umbrellaValues(t, path))
	if err != nil {
		t.Fatalf("helm install -f %s: %v", path, err)
	}
	m, err := helmchart.Parse(rel)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Workload("wireguard")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, e := range w.Pod.Spec.Containers[0].Env {
		if e.Name == "SEMAPHORE_WG_LISTEN_PORTS" {
			return e.Value
		}
	}
	t.Fatalf("%s: semaphore-wireguard has no SEMAPHORE_WG_LISTEN_PORTS", path)
	return ""
}

// link --both-ways links two clusters in both directions in one command, each consumer's values
// (its name, the other's entry and listen port) in a file of its own that the umbrella chart
// installs with nothing else. Both directions are checked before either is written: when one
// cannot be linked, neither cluster nor file is touched. Run again, it writes nothing.
func TestLinkBothWays(t *testing.T) {
	clusters := testenv.Start(t, testenv.Options{Audit: true}, "aws", "gcp")
	aws, gcp := clusters[0], clusters[1]
	ctx := context.Background()
	kc := kubeconfig(t, aws, gcp)
	dir := filepath.Join(t.TempDir(), "values")
	args := []string{"--from", "aws", "--to", "gcp", "--both-ways", "--values-out-dir", dir, "--pod-ranges", "198.18.1.0/24"}

	t.Run("flags that do not go together", func(t *testing.T) {
		fails(t, kc, []string{"--from", "aws", "--to", "gcp", "--both-ways"}, "--both-ways", "--values-out-dir")
		fails(t, kc, []string{"--from", "aws", "--to", "gcp", "--to-pod-ranges", "10.0.0.0/16"}, "--to-pod-ranges", "--both-ways")
		fails(t, kc, []string{"--from", "aws", "--to", "gcp", "--values-out", "a.yaml", "--values-out-dir", dir}, "give one")
		fails(t, kc, append(args, "--pod-ranges", "10.0.0.1/16"), `--pod-ranges: "10.0.0.1/16" is not a CIDR`)
		fails(t, kc, append(args, "--listen-port", "500"), "--listen-port 500", "1024-65535")
	})

	if err := aws.EnsureNamespace(ctx, remoteNamespace); err != nil {
		t.Fatal(err)
	}
	if err := gcp.EnsureNamespace(ctx, remoteNamespace); err != nil {
		t.Fatal(err)
	}
	installRemote(t, aws, "gcp")
	installRemote(t, gcp, "merit")
	fillToken(t, aws, "gcp")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gcp-node-1"}, Spec: corev1.NodeSpec{PodCIDR: "198.18.2.0/24", PodCIDRs: []string{"198.18.2.0/24"}}}
	if _, err := gcp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("one direction cannot be linked", func(t *testing.T) {
		fails(t, kc, args, `no consumer "aws"`)
		for _, c := range clusters {
			if w := writesOfLink(t, c); w != 0 {
				t.Errorf("link wrote %d times to %s, with the other direction refused", w, c.Name)
			}
		}
		if entries, err := os.ReadDir(dir); err == nil {
			t.Errorf("values written, with the other direction refused: %v", entries)
		}
	})

	installRemote(t, gcp, "aws")
	awsToken := fillToken(t, gcp, "aws")
	gcpToken := fillToken(t, aws, "gcp")

	t.Run("both ways", func(t *testing.T) {
		code, out, errOut := run(t, kc, args...)
		if code != 0 || out != "" {
			t.Fatalf("exit %d: %s%s", code, errOut, out)
		}
		for _, want := range []string{"semaphore/semaphore-remote-aws in context gcp: created", "semaphore/semaphore-remote-gcp in context aws: created",
			"wireguard.listenPorts.aws=51821 in " + filepath.Join(dir, "gcp.yaml") + ": written", "wireguard.listenPorts.gcp=51821 in " + filepath.Join(dir, "aws.yaml") + ": written"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("link does not say %q: %s", want, errOut)
			}
		}
		if got, _ := copied(t, gcp); got != gcpToken {
			t.Errorf("gcp's copy of aws's token holds %q, want the token aws made for gcp", got)
		}
		s, err := aws.Client.CoreV1().Secrets("semaphore").Get(ctx, "semaphore-remote-gcp", metav1.GetOptions{})
		if err != nil || string(s.Data["token"]) != awsToken {
			t.Errorf("aws's copy of gcp's token: %v, %v; want the token gcp made for aws", s, err)
		}
		for consumer, remote := range map[string]*testenv.Cluster{"gcp": aws, "aws": gcp} {
			path := filepath.Join(dir, consumer+".yaml")
			vals := umbrellaValues(t, path)
			if e, err := link.EntryIn(path, remote.Name); err != nil || e == nil || e.Server != remote.Config.Host {
				t.Errorf("%s: entry of %s %+v, %v", path, remote.Name, e, err)
			}
			if name := vals["global"].(map[string]any)["clusterName"]; name != consumer {
				t.Errorf("%s: global.clusterName %v, want %s", path, name, consumer)
			}
			if got, want := listenPortsEnv(t, path), remote.Name+":51821"; got != want {
				t.Errorf("%s installs semaphore-wireguard with listen ports %q, want %q", path, got, want)
			}
		}
		if e, _ := link.EntryIn(filepath.Join(dir, "gcp.yaml"), "aws"); !slices.Equal(e.PodRanges, []string{"198.18.1.0/24"}) {
			t.Errorf("aws's podRanges %v, want those of --pod-ranges", e.PodRanges)
		}
		if e, _ := link.EntryIn(filepath.Join(dir, "aws.yaml"), "gcp"); !slices.Equal(e.PodRanges, []string{"198.18.2.0/24"}) {
			t.Errorf("gcp's podRanges %v, want those proposed from its Node", e.PodRanges)
		}
	})

	t.Run("again", func(t *testing.T) {
		writes := writesOfLink(t, aws) + writesOfLink(t, gcp)
		code, _, errOut := run(t, kc, args...)
		if code != 0 || strings.Count(errOut, ": unchanged") != 4 {
			t.Errorf("exit %d, want both Secrets and both files unchanged: %s", code, errOut)
		}
		if w := writesOfLink(t, aws) + writesOfLink(t, gcp) - writes; w != 0 {
			t.Errorf("link run again wrote %d times", w)
		}
	})

	t.Run("another port", func(t *testing.T) {
		code, _, errOut := run(t, kc, append(args, "--listen-port", "51900")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := listenPortsEnv(t, filepath.Join(dir, "gcp.yaml")) + " " + listenPortsEnv(t, filepath.Join(dir, "aws.yaml")); got != "aws:51900 gcp:51900" {
			t.Errorf("listen ports %s, want 51900 at both ends", got)
		}
	})
}
