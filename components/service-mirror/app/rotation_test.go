package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// tokenFileDir is a Secret volume as the kubelet keeps it: the files are links into ..data,
// itself a link to a timestamped directory, swapped atomically on every update.
type tokenFileDir struct {
	dir string
	n   int
}

// write replaces the token the way the kubelet updates a mounted Secret.
func (d *tokenFileDir) write(t *testing.T, token string) {
	t.Helper()
	d.n++
	version := fmt.Sprintf("..v%d", d.n)
	if err := os.Mkdir(filepath.Join(d.dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.dir, version, "token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(d.dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if d.n == 1 {
		if err := os.Symlink(filepath.Join("..data", "token"), filepath.Join(d.dir, "token")); err != nil {
			t.Fatal(err)
		}
	}
}

// boundToken is a token of ServiceAccount sa in ns of c that is valid while Secret name exists
// there: deleting the Secret revokes it, as deleting a legacy token Secret does.
func boundToken(t *testing.T, c *testenv.Cluster, ns, sa, name string) string {
	t.Helper()
	ctx := context.Background()
	s, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// readerOf makes a ServiceAccount in ns of c that may read Services and EndpointSlices, as
// semaphore-remote's consumers may.
func readerOf(t *testing.T, c *testenv.Cluster, ns string) string {
	t.Helper()
	ctx := context.Background()
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	sa := "consumer"
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), ns, metav1.DeleteOptions{})
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return sa
}

// The rotation of docs/operations.md on real API servers: the service mirror reads aws with a
// token from a file, as the chart mounts it. A second token is made while the first still
// works, written into the file as the kubelet updates a Secret volume, and, once the client
// re-read the file (client-go caches a token file for a minute), the first is revoked. The
// running process goes on mirroring aws with no restart and no probe of aws failing (one every
// 200 ms, each a request with the token it holds), and the first token is refused from then on.
func TestTokenRotationNeedsNoRestartAndCausesNoErrors(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	ns := fixture.Namespace(t, "rotation")
	sa := readerOf(t, aws, ns)
	tokens := &tokenFileDir{dir: t.TempDir()}
	tokens.write(t, boundToken(t, aws, ns, sa, "token-a"))
	remotesDir := t.TempDir()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["aws"] = &clientcmdapi.Cluster{Server: aws.Config.Host, CertificateAuthorityData: aws.Config.CAData}
	kubeconfig.AuthInfos["aws"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(tokens.dir, "token")}
	kubeconfig.Contexts["aws"] = &clientcmdapi.Context{Cluster: "aws", AuthInfo: "aws"}
	kubeconfig.CurrentContext = "aws"
	if err := os.MkdirAll(filepath.Dir(remote.KubeconfigPath(remotesDir, "aws")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kubeconfig, remote.KubeconfigPath(remotesDir, "aws")); err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, "aws")
	cfg.RemotesDir = remotesDir
	cfg.RemoteProbeInterval = 200 * time.Millisecond // every probe is a request with the token
	src := mirror.Source{Cluster: "aws", Namespace: fixture.Namespace(t, "app"), Name: "web"}
	remoteService(t, aws, src.Namespace, "web", nil)
	remoteSlice(t, aws, src.Namespace, "web", "web-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.30"))
	r := start(t, cfg)
	mirrored := func(addr string) func() error {
		return func() error {
			_, sl, err := mirrorOf(cfg, src)
			if err == nil && !addressesOf(sl)[addr] {
				err = fmt.Errorf("mirror endpoints %v, want %s ready", addressesOf(sl), addr)
			}
			return err
		}
	}
	eventually(t, 30*time.Second, "mirrored with the first token", mirrored("198.18.2.30"))

	// A probe refused for its credentials (401) removes remote_identity_info until a later probe
	// is answered; a probe that merely timed out (a loaded machine) keeps it. So the series being
	// there throughout says no probe was refused, whatever the machine's load.
	awsAccepts := func() error {
		if !metricPresent(t, r.App.Registry, "semaphore_service_mirror_remote_identity_info", map[string]string{"remote": "aws"}) {
			return errors.New("remote_identity_info{aws} gone: aws refused the token")
		}
		return nil
	}
	eventually(t, 30*time.Second, "the component knows who it is in aws", awsAccepts)
	tokens.write(t, boundToken(t, aws, ns, sa, "token-b"))
	// client-go re-reads a token file at most a minute late; both tokens work meanwhile.
	testenv.Hold(t, 65*time.Second, "aws accepts every probe's token while the file changes", awsAccepts)
	if err := aws.Client.CoreV1().Secrets(ns).Delete(context.Background(), "token-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	remoteSlice(t, aws, src.Namespace, "web", "web-fghij", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.31"))
	eventually(t, 30*time.Second, "a change after the first token was revoked is mirrored", mirrored("198.18.2.31"))
	// A probe every 200 ms, each a request with the token the client holds: none is refused.
	testenv.Hold(t, 2*time.Second, "aws accepts every probe's token after the first token was revoked", awsAccepts)
	revoked, err := kubernetes.NewForConfig(&rest.Config{
		Host: aws.Config.Host, BearerTokenFile: filepath.Join(tokens.dir, "..v1", "token"),
		TLSClientConfig: rest.TLSClientConfig{CAData: aws.Config.CAData},
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first token refused", func() error {
		if _, err := revoked.CoreV1().Services("").List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("with the revoked token: %w, want 401", err)
		}
		return nil
	})
}
