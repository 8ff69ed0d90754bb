package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The uninstall mode deletes every mirror, global service and MCS import the component made,
// in the mirror namespace and in every other, with their EndpointSlices and the Lease, and
// reports ready only then; a Service of someone else in the mirror namespace stays.
func TestUninstallModeDeletesEverythingTheComponentMade(t *testing.T) {
	cfg := newMCSConfig(t, "aws")
	cfg.GlobalSelector = global.DefaultSelector + "," + testLabel + "=" + testLabelValue(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "app")
	if err := local.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	remoteService(t, aws, ns, "web", nil)
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	exportService(t, aws, ns, "db", nil, "198.18.2.2")
	users := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: cfg.Namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if _, err := local.Client.CoreV1().Services(cfg.Namespace).Create(context.Background(), users, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	normal := start(t, cfg)
	eventually(t, 30*time.Second, "the mirror and the global service made", func() error {
		if _, _, err := mirrorOf(cfg, mirror.Source{Cluster: "aws", Namespace: ns, Name: "web"}); err != nil {
			return err
		}
		_, _, err := globalOf(cfg, global.Key{Namespace: ns, Name: "api"})
		return err
	})
	expectImport(t, mcs.Key{Namespace: ns, Name: "db"}, map[string][]string{"aws": {"198.18.2.2"}})
	normal.Stop()

	u := fixture.Start(t, cfg.Identity, func(log *slog.Logger) (*daemon.Uninstalling, error) {
		cfg.Uninstall = true
		return app.NewUninstalling(cfg, log)
	})
	eventually(t, 30*time.Second, "nothing of the component left, the Lease gone, ready", func() error {
		if err := noneOwned(t, "semaphore-service-mirror"); err != nil {
			return err
		}
		_, err := local.Client.CoordinationV1().Leases(cfg.LeaderElection.Namespace).Get(context.Background(), cfg.LeaderElection.LeaseName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Lease: %w", err)
		}
		return readyz(u.App.AdminAddr())
	})
	if _, err := local.Client.CoreV1().Services(cfg.Namespace).Get(context.Background(), "users", metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's Service in the mirror namespace: %v", err)
	}
}

// noneOwned is nil when no Service, EndpointSlice or ServiceImport in any namespace of the
// local cluster carries component's managed-by label.
func noneOwned(t *testing.T, component string) error {
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + component}
	svcs, err := local.Client.CoreV1().Services("").List(ctx, opts)
	if err != nil {
		return err
	}
	eps, err := local.Client.DiscoveryV1().EndpointSlices("").List(ctx, opts)
	if err != nil {
		return err
	}
	sis, err := mcsOf(t, local).MulticlusterV1beta1().ServiceImports("").List(ctx, opts)
	if err != nil {
		return err
	}
	if n := len(svcs.Items) + len(eps.Items) + len(sis.Items); n > 0 {
		return fmt.Errorf("%d Services, %d EndpointSlices, %d ServiceImports left", len(svcs.Items), len(eps.Items), len(sis.Items))
	}
	return nil
}

// readyz is nil when the admin server at addr answers /readyz with 200.
func readyz(addr string) error {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz %d: %s", resp.StatusCode, body)
	}
	return nil
}
