package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// unlink's usage errors exit 2, say what is wrong and point at unlink's help; so does a context
// the kubeconfig does not have, without the help.
func TestUnlinkExitsTwoOnUsageErrors(t *testing.T) {
	kubeconfig := cli.WriteKubeconfig(t, unreachable)
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"--remote-name", "aws"}, "unlink needs --to", true},
		{[]string{"--to", "down"}, "unlink needs --remote-name", true},
		{[]string{"--to", "down", "--remote-name", "aws", "--both-ways"}, "--both-ways unlinks --to from --from as well: give --from", true},
		{[]string{"--from", "down", "--to", "down"}, "--from and --to are both down", true},
		{[]string{"--to", "down", "--remote-name", "aws", "--values-out", "a.yaml", "--values-out-dir", "values"}, "give one", true},
		{[]string{"--from", "aws", "--to", "down", "--both-ways", "--values-out", "a.yaml"}, "give --values-out-dir, not --values-out", true},
		{[]string{"--to", "down", "--remote-name", "AWS_1"}, `--remote-name "AWS_1" is no cluster's name`, true},
		{[]string{"--to", "down", "--remote-name", "aws", "-o", "table"}, `"table" is not json or yaml`, true},
		{[]string{"--to", "down", "--remote-name", "aws", "--force"}, "unknown flag: --force", true},
		{[]string{"--to", "nowhere", "--remote-name", "aws"}, `error: --to nowhere: no context "nowhere" in the kubeconfig`, false},
		{[]string{"--to", "down", "--remote-name", "aws"}, "error: context down: reading Secret semaphore/semaphore-remote-aws: ", false},
	} {
		var out, errOut bytes.Buffer
		code := cli.Main(append([]string{"unlink", "--kubeconfig", kubeconfig, "--timeout", "5s"}, tc.args...), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
		if help := "See 'kubectl semaphore unlink --help' for usage."; strings.Contains(errOut.String(), help) != tc.usage {
			t.Errorf("%q: error %q, want the help named: %v", tc.args, errOut.String(), tc.usage)
		}
	}
}

// unlink refuses a Secret link did not make and keeps it, exit 2; with nothing to remove, it
// exits 0. Its help names it as kubectl runs it.
func TestUnlinkExitStatus(t *testing.T) {
	gcp := testenv.Start(t, testenv.Options{}, "gcp")[0]
	run := commandOn(gcp)
	ctx := context.Background()
	if err := gcp.EnsureNamespace(ctx, "semaphore"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("unlink", "--to", "gcp", "--remote-name", "aws")
	if code != 0 || !strings.Contains(out, "Secret semaphore/semaphore-remote-aws in context gcp: none, nothing to remove") {
		t.Errorf("nothing to remove: exit %d: %s%s", code, out, errOut)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "semaphore-remote-aws"}, Data: map[string][]byte{"token": []byte("mine")}}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("unlink", "--to", "gcp", "--remote-name", "aws")
	if code != 2 || !strings.Contains(errOut, "was not made by kubectl semaphore link") || strings.Contains(errOut, "--help") {
		t.Errorf("a Secret link did not make: exit %d, want 2: %s%s", code, out, errOut)
	}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Get(ctx, "semaphore-remote-aws", metav1.GetOptions{}); err != nil {
		t.Errorf("the Secret link did not make: %v, want it kept", err)
	}

	code, out, _ = run("unlink", "--help")
	if code != 0 || !strings.Contains(out, "Usage:\n  kubectl semaphore unlink --to CONTEXT --remote-name NAME [flags]\n") || !strings.Contains(out, "helm upgrade") {
		t.Errorf("unlink --help: exit %d:\n%s", code, out)
	}
}
