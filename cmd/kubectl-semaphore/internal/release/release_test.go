package release_test

import (
	"context"
	"slices"
	"testing"

	policyapp "github.com/kube-semaphore/semaphore/components/policy/app"
	mirrorapp "github.com/kube-semaphore/semaphore/components/service-mirror/app"
	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

var aws, gcp *testenv.Cluster

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Server{Into: &aws, Name: "aws"}, clustertest.Server{Into: &gcp, Name: "gcp"})
}

// Find finds the three controllers of the umbrella chart with their configuration, and the
// credentials of a remote are those the pods mount: with them, the client is the consumer's
// ServiceAccount that semaphore-remote made in the remote, and may read its Services.
func TestFindsComponentsAndTheirRemoteCredentials(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	ctx := context.Background()
	clustertest.Link(t, aws, gcp, "aws", "gcp", aws.Config.Host)
	sa := "semaphore-remote-gcp"

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
		remotes, errs := c.Remotes(ctx, gcp.Client, release.CredentialOptions{})
		if len(errs) > 0 || len(remotes) != 1 {
			t.Fatalf("%s: remotes %v, errors %v", c.Name, remotes, errs)
		}
		client := kubernetes.NewForConfigOrDie(remotes[0].Config)
		got, err := remote.WhoAmI(ctx, client, "")
		if err != nil {
			t.Fatalf("%s: who am I in aws: %v", c.Name, err)
		}
		if want := "system:serviceaccount:semaphore-remote:" + sa; got != want {
			t.Errorf("%s: the credentials of aws are %s, want %s", c.Name, got, want)
		}
		if _, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Errorf("%s: listing aws's Services with its credentials: %v", c.Name, err)
		}
	}

	if _, err := components[0].Remote(ctx, gcp.Client, "merit", release.CredentialOptions{}); err == nil {
		t.Error("credentials of a remote the component does not read: no error")
	}
}

// The metrics are read under the names the components give them.
func TestPrefixesAreTheComponents(t *testing.T) {
	for component, want := range map[string]string{release.ServiceMirror: mirrorapp.MetricsPrefix, release.Policy: policyapp.MetricsPrefix, release.WireGuard: wgapp.MetricsPrefix} {
		if got := release.MetricPrefix[component]; got != want {
			t.Errorf("metric prefix of %s: %q, want %q", component, got, want)
		}
	}
}
