package charts_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// Two real API servers, started by the first test that needs them and shared by the tests of
// the package: aws (what semaphore-remote is installed in; it serves Calico's IPAMBlock CRD from
// the wireguard fixtures, what consumers with calicoIPAM read) and gcp (the umbrella; it serves
// the monitoring and GlobalNetworkSet CRDs from the fixtures).
var (
	clustersOnce sync.Once
	clustersErr  error
	awsCluster   *testenv.Cluster
	gcpCluster   *testenv.Cluster
	clustersDir  string
)

func TestMain(m *testing.M) {
	// Helm's chart loader reports, through the standard logger, every symbolic link it follows;
	// every chart reaches the library chart (charts/common) through one, so every load of the
	// umbrella would print four.
	log.SetOutput(io.Discard)
	code := m.Run()
	for _, c := range []*testenv.Cluster{awsCluster, gcpCluster} {
		if c != nil {
			c.Stop()
		}
	}
	if clustersDir != "" {
		_ = os.RemoveAll(clustersDir)
	}
	os.Exit(code)
}

// clusters starts (once) and returns the aws and gcp API servers.
func clusters(t testing.TB) (aws, gcp *testenv.Cluster) {
	t.Helper()
	testenv.SkipIfShort(t, "kube-apiserver and etcd")
	clustersOnce.Do(func() {
		clustersDir, clustersErr = os.MkdirTemp("", "semaphore-charts-test-")
		if clustersErr != nil {
			return
		}
		crds := []string{
			filepath.Join(testbed.RepoRoot(), "test", "charts", "testdata", "crds"),
			filepath.Join(testbed.RepoRoot(), "components", "policy", "testdata", "crds"),
		}
		var wg sync.WaitGroup
		var errs [2]error
		wg.Go(func() {
			awsCluster, errs[0] = testenv.StartCluster("aws", testenv.Options{
				Dir: filepath.Join(clustersDir, "aws"), ServiceCIDRs: "10.1.0.0/16",
				CRDDirs: []string{filepath.Join(testbed.RepoRoot(), "components", "wireguard", "testdata", "crds")},
			})
		})
		wg.Go(func() {
			gcpCluster, errs[1] = testenv.StartCluster("gcp", testenv.Options{Dir: filepath.Join(clustersDir, "gcp"), ServiceCIDRs: "10.2.0.0/16", CRDDirs: crds})
		})
		wg.Wait()
		clustersErr = errors.Join(errs[:]...)
	})
	if clustersErr != nil {
		t.Fatalf("starting API servers: %v", clustersErr)
	}
	return awsCluster, gcpCluster
}

// helmConfig is helmchart.Config for namespace in cluster c, as an admin.
func helmConfig(t testing.TB, c *testenv.Cluster, namespace string) *action.Configuration {
	t.Helper()
	cfg, err := helmchart.Config(c.DirectKubeconfig, namespace, t.TempDir(), func(format string, v ...any) { t.Logf("helm: "+format, v...) })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// install installs chart dir as release name in namespace of cluster c (helmchart.Install).
// Before that, every object the release renders goes to the API server in a strict
// server-side dry run, which refuses a field the API does not know instead of dropping it.
func install(t testing.TB, c *testenv.Cluster, dir, name, namespace string, vals map[string]any) *manifest {
	t.Helper()
	if err := c.EnsureNamespace(context.Background(), namespace); err != nil {
		t.Fatal(err)
	}
	preview := action.NewInstall(helmConfig(t, c, namespace))
	preview.ReleaseName, preview.Namespace = name, namespace
	preview.DryRun, preview.DryRunOption = true, "server"
	rel, err := preview.Run(loadChart(t, dir), vals)
	if err != nil {
		t.Fatalf("helm install --dry-run=server %s: %v", name, err)
	}
	dryRun(t, c, parseRelease(t, rel), namespace)

	m, err := helmchart.Install(helmConfig(t, c, namespace), dir, name, namespace, vals)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return m
}

// upgrade upgrades release name in namespace of cluster c to chart dir with vals through the
// Helm SDK, as `helm upgrade` would.
func upgrade(t testing.TB, c *testenv.Cluster, dir, name, namespace string, vals map[string]any) *manifest {
	t.Helper()
	up := action.NewUpgrade(helmConfig(t, c, namespace))
	up.Namespace = namespace
	up.Timeout = time.Minute
	rel, err := up.Run(name, loadChart(t, dir), vals)
	if err != nil {
		t.Fatalf("helm upgrade %s in %s: %v", name, c.Name, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release %s is %s: %s", name, rel.Info.Status, rel.Info.Description)
	}
	return parseRelease(t, rel)
}

// uninstall uninstalls release name through the Helm SDK, as `helm uninstall --no-hooks` would.
// The charts' pre-delete hooks (their uninstall Jobs) need the components' pods and a Job
// controller, and no controller runs with the test API servers: a Job would never finish.
func uninstall(t testing.TB, c *testenv.Cluster, name, namespace string) {
	t.Helper()
	u := action.NewUninstall(helmConfig(t, c, namespace))
	u.DisableHooks = true
	u.Timeout = time.Minute
	if _, err := u.Run(name); err != nil {
		t.Fatalf("helm uninstall %s: %v", name, err)
	}
}

// clients are an admin's dynamic client and REST mapper for c.
func clients(t testing.TB, c *testenv.Cluster) (dynamic.Interface, meta.RESTMapper) {
	t.Helper()
	// Without client-go's default limit of 5 requests per second, which discovery alone exceeds.
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS = -1
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dynamic.NewForConfigOrDie(cfg), restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

// resourceOf returns the client of o's resource, in o's namespace (or namespace) if namespaced.
func resourceOf(t testing.TB, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured, namespace string) dynamic.ResourceInterface {
	t.Helper()
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return dyn.Resource(mapping.Resource)
	}
	ns := o.GetNamespace()
	if ns == "" {
		ns = namespace
	}
	return dyn.Resource(mapping.Resource).Namespace(ns)
}

// dryRun sends every object of m to c in a strict server-side dry run. Objects in a namespace
// the release itself creates are checked once it exists.
func dryRun(t testing.TB, c *testenv.Cluster, m *manifest, namespace string) {
	t.Helper()
	dyn, mapper := clients(t, c)
	created := map[string]bool{}
	for _, o := range m.Of("Namespace") {
		created[o.GetName()] = true
	}
	for _, o := range m.Objects {
		if created[o.GetNamespace()] {
			continue
		}
		_, err := resourceOf(t, dyn, mapper, o, namespace).Create(context.Background(), o.DeepCopy(), metav1.CreateOptions{
			DryRun:          []string{metav1.DryRunAll},
			FieldValidation: metav1.FieldValidationStrict,
		})
		if err != nil {
			t.Errorf("%s %s (%s) is refused by the API server: %v", o.GetKind(), o.GetName(), m.Source[o], err)
		}
	}
}

// checkInstalled checks that every object of the release exists in c, owned by the release,
// and that no hook does: the charts' hooks are pre-delete, made only by an uninstall.
func checkInstalled(t testing.TB, c *testenv.Cluster, m *manifest, name, namespace string) {
	t.Helper()
	dyn, mapper := clients(t, c)
	for _, o := range m.Objects {
		if isHook(o) {
			_, err := resourceOf(t, dyn, mapper, o, namespace).Get(context.Background(), o.GetName(), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("hook %s %s (%s) is there after the install: %v", o.GetKind(), o.GetName(), m.Source[o], err)
			}
			continue
		}
		got, err := resourceOf(t, dyn, mapper, o, namespace).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s of release %s: %v", o.GetKind(), o.GetName(), name, err)
			continue
		}
		if got.GetAnnotations()["meta.helm.sh/release-name"] != name || got.GetAnnotations()["meta.helm.sh/release-namespace"] != namespace {
			t.Errorf("%s %s: not marked as release %s/%s's: %v", o.GetKind(), o.GetName(), namespace, name, got.GetAnnotations())
		}
	}
}

// checkUninstalled waits until no object of the release is left in c, nor the release itself.
func checkUninstalled(t testing.TB, c *testenv.Cluster, m *manifest, name, namespace string) {
	t.Helper()
	dyn, mapper := clients(t, c)
	testenv.Eventually(t, 30*time.Second, "release "+name+" gone", func() error {
		var left []string
		for _, o := range m.Objects {
			got, err := resourceOf(t, dyn, mapper, o, namespace).Get(context.Background(), o.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return err
			// No namespace controller runs here to empty and finalize a deleted Namespace: it
			// stays Terminating, which is as far as deleting it goes.
			case o.GetKind() == "Namespace" && got.GetDeletionTimestamp() != nil:
			default:
				left = append(left, o.GetKind()+" "+o.GetName())
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		return nil
	})
	list := action.NewList(helmConfig(t, c, namespace))
	list.All = true
	rels, err := list.Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		if r.Name == name {
			t.Errorf("release %s is still recorded (%s)", name, r.Info.Status)
		}
	}
}

// impersonating writes a kubeconfig for c whose user is c's admin impersonating user, the way
// `kubectl --as` does: what the API server authorizes is exactly user's rights.
func impersonating(t testing.TB, c *testenv.Cluster, user string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(c.DirectKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-"+strings.NewReplacer(":", "-").Replace(user))
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountUser is the user name of a ServiceAccount.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
