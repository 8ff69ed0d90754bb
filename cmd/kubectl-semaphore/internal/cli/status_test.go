package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/internal/testenv"
	"github.com/kube-semaphore/semaphore/test/charts"
)

// status and graph run on the contexts given: for a cluster whose one remote cannot be
// reached, status says so (and still exits 0: it shows, check judges), -o json is the same
// state, graph is a digraph with the remote in red; an unknown context is an error naming it,
// exit status 1, after the output of the others.
func TestStatusAndGraph(t *testing.T) {
	gcp := testenv.Start(t, testenv.Options{}, "gcp")[0]
	ctx := context.Background()
	if err := gcp.EnsureNamespace(ctx, "semaphore"); err != nil {
		t.Fatal(err)
	}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "semaphore-remote-aws"},
		Data:       map[string][]byte{"token": []byte("not-a-token")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(`
global:
  clusterName: gcp
  remotes: [{name: aws, server: "https://127.0.0.1:1", tokenSecret: {name: semaphore-remote-aws, key: token}}]
policy: {calicoAPI: crd.projectcalico.org/v1}
wireguard: {listenPorts: {aws: 51821}}
`), &vals); err != nil {
		t.Fatal(err)
	}
	cfg, err := charts.Config(gcp.Kubeconfig, "semaphore", t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := charts.Install(cfg, filepath.Join(testbed.RepoRoot(), "charts/semaphore"), "semaphore", "semaphore", vals); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(append(args, "--kubeconfig", gcp.Kubeconfig), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run("status")
	t.Logf("status:\n%s", out)
	if code != 0 || !strings.HasPrefix(out, "CLUSTER gcp\n") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"aws     no  ", // no component's credentials reach it
		"remote aws is not reachable with the credentials of policy, service-mirror, wireguard: Post \"https://127.0.0.1:1/",
		// No Calico CRDs in this cluster.
		"GlobalNetworkSets: the cluster does not serve crd.projectcalico.org/v1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}

	code, out, errOut = run("status", "--contexts", "gcp", "-o", "json")
	var states []mesh.ClusterState
	if err := json.Unmarshal([]byte(out), &states); code != 0 || err != nil {
		t.Fatalf("status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(states) != 1 || states[0].Context != "gcp" || states[0].Cluster != "gcp" || len(states[0].Remotes) != 1 || states[0].Remotes[0].Reachable() {
		t.Errorf("status -o json: %+v", states)
	}

	code, out, errOut = run("graph", "--contexts", "gcp")
	if code != 0 || !strings.HasPrefix(out, "digraph semaphore {\n") || !strings.Contains(out, `"aws" -> "gcp" [label="0 mirrors\n0 sets, 0 nets\nunreachable", style=dashed, color=red, fontcolor=red];`) {
		t.Errorf("graph: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = run("status", "--contexts", "gcp,nowhere")
	if code != 1 || !strings.Contains(out, "CLUSTER gcp (context gcp)") || !strings.Contains(errOut, `context nowhere: no context "nowhere" in the kubeconfig`) {
		t.Errorf("status with an unknown context: exit %d\n%s\n%s", code, out, errOut)
	}
}
