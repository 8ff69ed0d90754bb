package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// status and graph run on the contexts given: for a cluster whose one remote is not known to
// answer its controllers (they have no running pod to say so; probed from here, it cannot be
// reached), status says so (and still exits 0: it shows, check judges), -o json is the same
// state, and -o yaml the same fields, graph is a digraph with the remote in red; an unknown
// context is an error naming it, exit status 2 (it could not be read), after the output of the
// others. Only --probe-remotes sends a request to the
// remote's address.
func TestStatusAndGraph(t *testing.T) {
	gcp := unanswered(t, false)

	run := commandOn(gcp)

	code, out, errOut := run("status")
	t.Logf("status:\n%s", out)
	if code != 0 || !strings.HasPrefix(out, "CLUSTER gcp\n") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"aws     no  ", // no component's pods say it answers them
		"remote aws: the metrics of wireguard do not say it answers: DaemonSet semaphore/semaphore-wireguard has no running pod to say whether the remote answers it",
		// No Calico CRDs in this cluster.
		"GlobalNetworkSets: the cluster does not serve crd.projectcalico.org/v1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("status sent a request to the remote's address without --probe-remotes:\n%s", out)
	}

	code, out, errOut = run("status", "--probe-remotes")
	if code != 0 || !strings.Contains(out, "aws     no  ") || // no component's credentials reach it
		!strings.Contains(out, "remote aws is not reachable with the credentials of policy, service-mirror, wireguard: Post \"https://127.0.0.1:1/") {
		t.Errorf("status --probe-remotes: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = run("status", "--contexts", "gcp", "-o", "json")
	var states []mesh.ClusterState
	if err := json.Unmarshal([]byte(out), &states); code != 0 || err != nil {
		t.Fatalf("status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(states) != 1 || states[0].Context != "gcp" || states[0].Cluster != "gcp" || len(states[0].Remotes) != 1 || states[0].Remotes[0].Reachable() {
		t.Errorf("status -o json: %+v", states)
	}
	code, out, errOut = run("status", "--contexts", "gcp", "-o", "yaml")
	var fromYAML []mesh.ClusterState
	if err := yaml.UnmarshalStrict([]byte(out), &fromYAML); code != 0 || err != nil || len(fromYAML) != 1 ||
		fromYAML[0].Context != "gcp" || len(fromYAML[0].Remotes) != 1 || fromYAML[0].Remotes[0].Name != states[0].Remotes[0].Name {
		t.Errorf("status -o yaml: exit %d, %v: %+v\n%s", code, err, fromYAML, errOut)
	}

	for _, probe := range []string{"--probe-remotes=false", "--probe-remotes"} {
		code, out, errOut = run("graph", "--contexts", "gcp", probe)
		if code != 0 || !strings.HasPrefix(out, "digraph semaphore {\n") || !strings.Contains(out, `"aws" -> "gcp" [label="0 mirrors\n0 sets, 0 nets\nunreachable", style=dashed, color=red, fontcolor=red];`) {
			t.Errorf("graph %s: exit %d\n%s\n%s", probe, code, out, errOut)
		}
	}

	code, out, errOut = run("status", "--contexts", "gcp,nowhere")
	if code != 2 || !strings.Contains(out, "CLUSTER gcp (context gcp)") || !strings.Contains(errOut, `context nowhere: no context "nowhere" in the kubeconfig`) {
		t.Errorf("status with an unknown context: exit %d\n%s\n%s", code, out, errOut)
	}
}

// commandOn returns a function that runs the command line with args on the cluster c (its
// kubeconfig), and returns the exit status, the output and the errors.
func commandOn(c *testenv.Cluster) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(append(args, "--kubeconfig", c.Kubeconfig), &out, &errOut)
		return code, out.String(), errOut.String()
	}
}

// unanswered is a cluster gcp with the semaphore chart reading a remote aws that does not
// answer, at 127.0.0.1:1, with a token it would not take; the service mirror serves the
// Multi-Cluster Services API when servesMCS.
func unanswered(t *testing.T, servesMCS bool) *testenv.Cluster {
	t.Helper()
	gcp := testenv.Start(t, testenv.Options{}, "gcp")[0]
	clustertest.TokenSecret(t, gcp, "aws", "not-a-token")
	if servesMCS {
		clustertest.UmbrellaMCS(t, gcp, "gcp", "aws", "https://127.0.0.1:1")
	} else {
		clustertest.Umbrella(t, gcp, "gcp", "aws", "https://127.0.0.1:1", nil)
	}
	return gcp
}
