package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A remote's kubeconfig is read out of a Secret of the cluster, which whoever may write that
// Secret chooses. check and status with --probe-remotes refuse one whose user would run a program
// on this machine (an exec credential plugin, an auth-provider), naming the remote, the Secret and
// the flag, and run nothing; with --allow-exec-plugins the plugin runs and its credentials are
// used. Without --probe-remotes, check, status and graph never use the remotes' credentials, so
// run nothing.
func TestKubeconfigsThatRunProgramsHereAreRefused(t *testing.T) {
	clusters := testenv.Start(t, testenv.Options{}, "aws", "gcp")
	aws, gcp := clusters[0], clusters[1]
	ctx := context.Background()

	// In aws, the consumer gcp and its token; the exec plugin hands out that token, and leaves
	// a mark when it runs.
	clustertest.Install(t, aws, "charts/semaphore-remote", "semaphore-remote", "semaphore-remote", "clusterName: aws\nconsumers: [{name: gcp}]\n")
	token := clustertest.ConsumerToken(t, aws, "gcp")
	dir := t.TempDir()
	marker, plugin := filepath.Join(dir, "the-plugin-ran"), filepath.Join(dir, "credential-plugin")
	credential := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":%q}}`, token)
	if err := os.WriteFile(plugin, fmt.Appendf(nil, "#!/bin/sh\ntouch %s\necho '%s'\n", marker, credential), 0o755); err != nil {
		t.Fatal(err)
	}
	ran := func() bool {
		_, err := os.Stat(marker)
		return err == nil
	}

	// In gcp, the umbrella reads aws through the whole kubeconfig of Secret aws-kubeconfig.
	kubeconfigSecret := func(user *clientcmdapi.AuthInfo) {
		t.Helper()
		kc := clientcmdapi.NewConfig()
		kc.Clusters["aws"] = &clientcmdapi.Cluster{Server: aws.Config.Host, CertificateAuthorityData: aws.Config.CAData}
		kc.AuthInfos["aws"] = user
		kc.Contexts["aws"] = &clientcmdapi.Context{Cluster: "aws", AuthInfo: "aws"}
		kc.CurrentContext = "aws"
		data, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws-kubeconfig", Namespace: "semaphore"}, Data: map[string][]byte{"kubeconfig": data}}
		if _, err := gcp.Client.CoreV1().Secrets("semaphore").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := gcp.EnsureNamespace(ctx, "semaphore"); err != nil {
		t.Fatal(err)
	}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aws-kubeconfig"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.UmbrellaWithKubeconfig(t, gcp, "gcp", "aws", aws.Config.Host, "aws-kubeconfig")
	execUser := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: plugin, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	kubeconfigSecret(execUser)

	run := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Main(append(args, "--kubeconfig", gcp.Kubeconfig), &out, &errOut)
		t.Logf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		return code, out.String(), errOut.String()
	}
	// checkAWS runs check with args and returns its results for remote aws, by check.
	checkAWS := func(t *testing.T, args ...string) map[string][]check.Result {
		t.Helper()
		_, out, _ := run(t, append([]string{"check", "-o", "json", "--skip", "peers,handshakes", "--remote-timeout", "5s"}, args...)...)
		var results []check.Result
		if err := json.Unmarshal([]byte(out), &results); err != nil {
			t.Fatalf("check -o json: %v\n%s", err, out)
		}
		byCheck := map[string][]check.Result{}
		for _, r := range results {
			if r.Remote == "aws" {
				byCheck[r.Check] = append(byCheck[r.Check], r)
			}
		}
		return byCheck
	}
	refused := func(t *testing.T, what string, byCheck map[string][]check.Result) {
		t.Helper()
		if len(byCheck[check.ProbeReachable]) != 3 || len(byCheck[check.ProbeIdentity]) != 0 {
			t.Errorf("%s: results about aws %v, want 3 probe-reachable failures (one per component) and nothing after them", what, byCheck)
		}
		for _, r := range byCheck[check.ProbeReachable] {
			for _, want := range []string{"remote aws (Secrets [semaphore/aws-kubeconfig])", what, "on this machine: refused", "--allow-exec-plugins"} {
				if r.OK || !strings.Contains(r.Message, want) {
					t.Errorf("%+v: want a failure saying %q", r, want)
				}
			}
		}
	}

	t.Run("check runs no plugin without --probe-remotes", func(t *testing.T) {
		byCheck := checkAWS(t, "--allow-exec-plugins")
		if len(byCheck[check.Reachable]) != 3 || len(byCheck[check.ProbeReachable]) != 0 {
			t.Errorf("results about aws %v, want the pods' reachable and no probe from here", byCheck)
		}
		if ran() {
			t.Fatal("check without --probe-remotes ran the exec plugin of a kubeconfig read from a Secret")
		}
	})

	t.Run("check refuses an exec plugin", func(t *testing.T) {
		refused(t, fmt.Sprintf("the exec credential plugin %q", plugin), checkAWS(t, "--probe-remotes"))
		if ran() {
			t.Fatal("check ran the exec plugin of a kubeconfig read from a Secret")
		}
	})

	t.Run("status refuses an exec plugin", func(t *testing.T) {
		if code, out, _ := run(t, "status"); code != 0 || strings.Contains(out, "refused") {
			t.Errorf("status without --probe-remotes: exit %d, want the remotes' credentials not read:\n%s", code, out)
		}
		code, out, _ := run(t, "status", "--probe-remotes")
		if code != 0 || !strings.Contains(out, "aws     unknown") || !strings.Contains(out, fmt.Sprintf("the exec credential plugin %q on this machine: refused", plugin)) ||
			!strings.Contains(out, "--allow-exec-plugins") {
			t.Errorf("status --probe-remotes: exit %d, want aws's reachability unknown and the refusal under Problems:\n%s", code, out)
		}
		for _, probe := range []string{"--probe-remotes=false", "--probe-remotes"} {
			if code, _, _ := run(t, "graph", probe); code != 0 {
				t.Errorf("graph %s: exit %d", probe, code)
			}
		}
		if ran() {
			t.Fatal("status or graph ran the exec plugin of a kubeconfig read from a Secret")
		}
	})

	t.Run("check refuses an auth-provider", func(t *testing.T) {
		kubeconfigSecret(&clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
			Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://127.0.0.1:1", "client-id": "semaphore"},
		}})
		t.Cleanup(func() { kubeconfigSecret(execUser) })
		refused(t, `the auth-provider "oidc"`, checkAWS(t, "--probe-remotes"))
	})

	t.Run("allowed", func(t *testing.T) {
		byCheck := checkAWS(t, "--allow-exec-plugins", "--probe-remotes")
		if !ran() {
			t.Fatal("with --allow-exec-plugins, the exec plugin did not run")
		}
		if len(byCheck[check.ProbeReachable]) != 3 || len(byCheck[check.ProbeIdentity]) != 3 {
			t.Fatalf("results about aws %v, want probe-reachable and probe-identity for each component", byCheck)
		}
		for _, r := range append(byCheck[check.ProbeReachable], byCheck[check.ProbeIdentity]...) {
			if !r.OK {
				t.Errorf("%+v: want it to pass with the plugin's token", r)
			}
		}
		if r := byCheck[check.ProbeIdentity][0]; !strings.Contains(r.Message, "system:serviceaccount:semaphore-remote:semaphore-remote-gcp") {
			t.Errorf("%+v: want the consumer's ServiceAccount, whose token the plugin handed out", r)
		}
		if code, out, _ := run(t, "status", "--allow-exec-plugins", "--probe-remotes"); code != 0 || !strings.Contains(out, "aws     yes") {
			t.Errorf("status --allow-exec-plugins --probe-remotes: exit %d, want aws reachable:\n%s", code, out)
		}
	})
}
