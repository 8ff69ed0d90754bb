// Package clustertest sets up, for the plugin's tests, what users have in their clusters: our
// charts installed with the Helm SDK into real API servers, and a consumer linked to a remote.
package clustertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// Install installs chart dir (relative to the repository) in c as release name in namespace,
// with values (YAML).
func Install(t testing.TB, c *testenv.Cluster, dir, name, namespace, values string) {
	t.Helper()
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	cfg, err := helmchart.Config(c.Kubeconfig, namespace, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helmchart.Install(cfg, filepath.Join(testbed.RepoRoot(), dir), name, namespace, vals); err != nil {
		t.Fatal(err)
	}
}

// Umbrella installs the semaphore chart in c (cluster name local, release and namespace
// "semaphore", every component) reading remote through the token Secret
// semaphore-remote-<remote> of that namespace, at server with the CA caData (none when empty).
func Umbrella(t testing.TB, c *testenv.Cluster, local, remote, server string, caData []byte) {
	t.Helper()
	ca := ""
	if len(caData) > 0 {
		ca = fmt.Sprintf("caData: %q, ", base64.StdEncoding.EncodeToString(caData))
	}
	umbrella(t, c, local, remote, tokenSecret(server, ca, remote), "")
}

// UmbrellaMCS installs the semaphore chart as Umbrella does, without a CA, with the service
// mirror serving the Multi-Cluster Services API (serviceMirror.mcs.enabled).
func UmbrellaMCS(t testing.TB, c *testenv.Cluster, local, remote, server string) {
	t.Helper()
	umbrella(t, c, local, remote, tokenSecret(server, "", remote), "serviceMirror: {mcs: {enabled: true}}\n")
}

// tokenSecret are the fields of a remote entry (server, the CA's field ca) whose token is in
// the Secret semaphore-remote-<remote>.
func tokenSecret(server, ca, remote string) string {
	return fmt.Sprintf("server: %q, %stokenSecret: {name: semaphore-remote-%s, key: token}", server, ca, remote)
}

// UmbrellaWithKubeconfig installs the semaphore chart as Umbrella does, reading remote through
// a whole kubeconfig: key kubeconfig of Secret semaphore/<secret> (global.remotes[].kubeconfigSecret;
// the entry's server, which the values require, is not used then).
func UmbrellaWithKubeconfig(t testing.TB, c *testenv.Cluster, local, remote, server, secret string) {
	t.Helper()
	umbrella(t, c, local, remote, fmt.Sprintf("server: %q, kubeconfigSecret: {name: %s}", server, secret), "")
}

// umbrella installs the semaphore chart with one remote, without podRanges, whose entry has
// the fields credentials besides (a YAML flow mapping's fields), and the values extra (YAML).
func umbrella(t testing.TB, c *testenv.Cluster, local, remote, credentials, extra string) {
	t.Helper()
	Install(t, c, "charts/semaphore", "semaphore", "semaphore", fmt.Sprintf(`
global:
  clusterName: %s
  remotes:
    - {name: %s, allowAnyPodAddress: true, %s}
policy: {calicoAPI: crd.projectcalico.org/v1}
wireguard: {listenPorts: {%s: 51821}}
%s`, local, remote, credentials, remote, extra))
}

// TokenSecret writes token into the Secret semaphore/semaphore-remote-<remote> of c, where the
// umbrella chart's remote entry reads it.
func TokenSecret(t testing.TB, c *testenv.Cluster, remote, token string) {
	t.Helper()
	ctx := context.Background()
	if err := c.EnsureNamespace(ctx, "semaphore"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets("semaphore").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "semaphore-remote-" + remote},
		Data:       map[string][]byte{"token": []byte(token)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Link links consumer to remote as semaphore-remote's NOTES do: semaphore-remote in remote
// (cluster name remoteName) with consumer consumerName, the token of the consumer's
// ServiceAccount in consumer, and the umbrella chart in consumer reading remote at server.
func Link(t testing.TB, remote, consumer *testenv.Cluster, remoteName, consumerName, server string) {
	t.Helper()
	Install(t, remote, "charts/semaphore-remote", "semaphore-remote", "semaphore-remote",
		fmt.Sprintf("clusterName: %s\nconsumers: [{name: %s}]\n", remoteName, consumerName))
	TokenSecret(t, consumer, remoteName, ConsumerToken(t, remote, consumerName))
	Umbrella(t, consumer, consumerName, remoteName, server, remote.Config.CAData)
}

// ConsumerToken is a new token of the ServiceAccount semaphore-remote made in c for consumer.
// No token controller runs with the test API servers to fill the consumer's token Secret, so
// the token comes from the TokenRequest API, for the same ServiceAccount.
func ConsumerToken(t testing.TB, c *testenv.Cluster, consumer string) string {
	t.Helper()
	sa := "semaphore-remote-" + consumer
	tr, err := c.Client.CoreV1().ServiceAccounts("semaphore-remote").CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s: %v", sa, err)
	}
	return tr.Status.Token
}
