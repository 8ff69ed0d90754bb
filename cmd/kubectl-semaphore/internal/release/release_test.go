package release_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/internal/testenv"
	"github.com/kube-semaphore/semaphore/test/charts"
)

var aws, gcp *testenv.Cluster

func TestMain(m *testing.M) {
	if testenv.Short() {
		os.Exit(m.Run())
	}
	var err error
	if aws, err = testenv.StartCluster("aws", testenv.Options{}); err == nil {
		gcp, err = testenv.StartCluster("gcp", testenv.Options{})
	}
	if err != nil {
		panic(err)
	}
	code := m.Run()
	aws.Stop()
	gcp.Stop()
	os.Exit(code)
}

// install installs chart dir (relative to the repository) in c with values.
func install(t *testing.T, c *testenv.Cluster, dir, name, namespace, values string) {
	t.Helper()
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	cfg, err := charts.Config(c.Kubeconfig, namespace, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := charts.Install(cfg, filepath.Join(testbed.RepoRoot(), dir), name, namespace, vals); err != nil {
		t.Fatal(err)
	}
}

// Find finds the three controllers of the umbrella chart with their configuration, and the
// credentials of a remote are those the pods mount: with them, the client is the consumer's
// ServiceAccount that semaphore-remote made in the remote, and may read its Services.
func TestFindsComponentsAndTheirRemoteCredentials(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	ctx := context.Background()
	install(t, aws, "charts/semaphore-remote", "semaphore-remote", "semaphore-remote", "clusterName: aws\nconsumers: [{name: gcp}]\n")
	sa := "semaphore-remote-gcp"
	tr, err := aws.Client.CoreV1().ServiceAccounts("semaphore-remote").CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s: %v", sa, err)
	}
	if err := gcp.EnsureNamespace(ctx, "semaphore"); err != nil {
		t.Fatal(err)
	}
	if _, err := gcp.Client.CoreV1().Secrets("semaphore").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "semaphore-remote-aws"},
		Data:       map[string][]byte{"token": []byte(tr.Status.Token)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	install(t, gcp, "charts/semaphore", "semaphore", "semaphore", `
global:
  clusterName: gcp
  remotes:
    - {name: aws, server: "`+aws.Config.Host+`", caData: "`+base64.StdEncoding.EncodeToString(aws.Config.CAData)+`", tokenSecret: {name: semaphore-remote-aws, key: token}}
policy: {calicoAPI: crd.projectcalico.org/v1}
wireguard: {listenPorts: {aws: 51821}}
`)

	components, err := release.Find(ctx, gcp.Client, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range components {
		names = append(names, c.Name)
	}
	if want := []string{"policy", "service-mirror", "wireguard"}; !slices.Equal(names, want) {
		t.Fatalf("components %v, want %v", names, want)
	}
	for _, c := range components {
		if c.LocalCluster() != "gcp" || !slices.Equal(c.RemoteNames(), []string{"aws"}) {
			t.Errorf("%s: local cluster %q, remotes %v", c.Name, c.LocalCluster(), c.RemoteNames())
		}
		remotes, errs := c.Remotes(ctx, gcp.Client)
		if len(errs) > 0 || len(remotes) != 1 {
			t.Fatalf("%s: remotes %v, errors %v", c.Name, remotes, errs)
		}
		client := kubernetes.NewForConfigOrDie(remotes[0].Config)
		review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: who am I in aws: %v", c.Name, err)
		}
		if got, want := review.Status.UserInfo.Username, "system:serviceaccount:semaphore-remote:"+sa; got != want {
			t.Errorf("%s: the credentials of aws are %s, want %s", c.Name, got, want)
		}
		if _, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Errorf("%s: listing aws's Services with its credentials: %v", c.Name, err)
		}
	}

	if _, err := components[0].Remote(ctx, gcp.Client, "merit"); err == nil {
		t.Error("credentials of a remote the component does not read: no error")
	}
}
