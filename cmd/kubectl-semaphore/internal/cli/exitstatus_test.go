package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// unreachable is a kubeconfig whose one context, down (the current one), has an API server
// that does not answer.
const unreachable = `apiVersion: v1
kind: Config
clusters: [{name: down, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: down, user: {token: not-a-token}}]
contexts: [{name: down, context: {cluster: down, user: down}}]
current-context: down
`

// A command that could not run exits 2 and says why on standard error: a usage error (an
// unknown command or flag, a bad flag value, an unknown -o format or --skip check, flags that
// do not go together) also points at the command's help; so do an API server that cannot be
// reached and a context the kubeconfig does not have, each named.
func TestExitStatusIsTwoWhenTheCommandCouldNotRun(t *testing.T) {
	kubeconfig := cli.WriteKubeconfig(t, unreachable)
	for _, tc := range []struct {
		args  []string
		want  []string
		usage string
	}{
		{[]string{"nosuch"}, []string{`unknown command "nosuch" for "kubectl semaphore"`}, "kubectl semaphore"},
		{[]string{"check", "--bogus"}, []string{"unknown flag: --bogus"}, "kubectl semaphore check"},
		{[]string{"check", "extra"}, []string{`unknown command "extra" for "kubectl semaphore check"`}, "kubectl semaphore check"},
		{[]string{"check", "--remote-timeout", "soon"}, []string{`invalid argument "soon" for "--remote-timeout"`}, "kubectl semaphore check"},
		{[]string{"check", "-o", "xml"}, []string{`invalid argument "xml" for "-o, --output" flag: "xml" is not json or yaml`}, "kubectl semaphore check"},
		{[]string{"status", "-o", "wide"}, []string{`"wide" is not json or yaml`}, "kubectl semaphore status"},
		{[]string{"link", "--from", "down", "--to", "up", "-o", "table"}, []string{`"table" is not json or yaml`}, "kubectl semaphore link"},
		{[]string{"check", "--skip", "reachable,nope,peer"}, []string{"--skip: no check named nope, peer (the checks: components, pods,"}, "kubectl semaphore check"},
		{[]string{"link", "--from", "down"}, []string{"link needs --from and --to"}, "kubectl semaphore link"},
		{[]string{"version", "--client", "--contexts", "down"}, []string{"[client contexts] were all set"}, "kubectl semaphore version"},
		{[]string{"check"}, []string{"error: cannot reach the API server: ", `"https://127.0.0.1:1/`}, ""},
		{[]string{"status"}, []string{"error: current context: cannot reach the API server: ", `"https://127.0.0.1:1/`}, ""},
		{[]string{"graph", "--contexts", "down"}, []string{"error: context down: cannot reach the API server: "}, ""},
		{[]string{"version"}, []string{"error: current context: cannot reach the API server: "}, ""},
		{[]string{"status", "--contexts", "nowhere"}, []string{`error: context nowhere: no context "nowhere" in the kubeconfig`}, ""},
		{[]string{"link", "--from", "down", "--to", "nowhere"}, []string{`error: --to nowhere: no context "nowhere" in the kubeconfig`}, ""},
		{[]string{"check", "--context", "nowhere"}, []string{`error: context "nowhere" does not exist`}, ""},
	} {
		var out, errOut bytes.Buffer
		code := cli.Main(append(tc.args, "--kubeconfig", kubeconfig), &out, &errOut)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s%s", tc.args, code, out.String(), errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%q: error %q does not say %q", tc.args, errOut.String(), w)
			}
		}
		if help := "See '" + tc.usage + " --help' for usage."; tc.usage != "" && !strings.Contains(errOut.String(), help) {
			t.Errorf("%q: error %q does not say %q", tc.args, errOut.String(), help)
		}
	}
}

// check exits 1 when a check fails (here: no Semaphore components at all), and -o yaml prints
// the same results as -o json.
func TestCheckExitsOneWhenACheckFails(t *testing.T) {
	empty := testenv.Start(t, testenv.Options{}, "empty")[0]
	run := commandOn(empty)
	var byFormat [2][]check.Result
	for i, format := range []string{"json", "yaml"} {
		code, out, errOut := run("check", "-o", format)
		if err := decoders[format]([]byte(out), &byFormat[i]); code != 1 || err != nil {
			t.Fatalf("check -o %s: exit %d, %v\n%s%s", format, code, err, out, errOut)
		}
	}
	if len(byFormat[0]) != 1 || byFormat[0][0].Check != "components" || byFormat[0][0].OK {
		t.Errorf("check -o json: %+v, want components to fail", byFormat[0])
	}
	if j, y := mustJSON(t, byFormat[0]), mustJSON(t, byFormat[1]); j != y {
		t.Errorf("check -o yaml says %s, -o json %s", y, j)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The help names the plugin as kubectl runs it, "kubectl semaphore", in every usage line, and
// says what the exit statuses mean.
func TestHelpSaysKubectlSemaphore(t *testing.T) {
	for args, want := range map[string][]string{
		"--help":         {"Usage:\n  kubectl semaphore [command]\n", "Exit status:\n  0  ", "  1  check ran, and a check failed", "  2  the command could not run"},
		"check --help":   {"Usage:\n  kubectl semaphore check [flags]\n", "-o, --output json|yaml", "network-sets."},
		"link --help":    {"Usage:\n  kubectl semaphore link --from CONTEXT --to CONTEXT [flags]\n"},
		"version --help": {"Usage:\n  kubectl semaphore version [--client] [--contexts CTX,...] [flags]\n"},
	} {
		var out, errOut bytes.Buffer
		if code := cli.Main(strings.Fields(args), &out, &errOut); code != 0 {
			t.Errorf("%s: exit %d: %s", args, code, errOut.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s does not say %q:\n%s", args, w, out.String())
			}
		}
	}
}
