package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// The uninstall mode deletes every GlobalNetworkSet the component made, of the remotes it
// reads and of any other (a remote dropped from the release), and its Lease; a set of
// someone else stays.
func TestUninstallModeDeletesEverySetOfOurs(t *testing.T) {
	forEachAPI(t, testUninstallModeDeletesEverySetOfOurs)
}

func testUninstallModeDeletesEverySetOfOurs(t *testing.T, api string) {
	cfg := newConfig(t, api, "gcp")
	ns := fixture.Namespace(t, "x")
	src := netset.Source{Cluster: "gcp", Namespace: ns, Name: "forwarder"}
	pod(t, gcp, ns, "a", "forwarder", "198.18.3.1")
	dropped := netset.Source{Cluster: "merit", Namespace: ns, Name: "forwarder"}
	createSet(t, api, netset.SetName(dropped), netset.Labels(dropped), "198.18.9.1/32")
	foreign := createForeignSet(t, api, fixture.Namespace(t, "foreign"))

	normal := start(t, cfg)
	testenv.Eventually(t, 30*time.Second, "the set made", func() error { return setHas(api, src, "198.18.3.1/32") })
	normal.Stop()

	u := fixture.Start(t, cfg.Identity, func(log *slog.Logger) (*daemon.Uninstalling, error) {
		cfg.Uninstall = true
		return app.NewUninstalling(cfg, log)
	})
	res, _ := calico.Resource(api)
	testenv.Eventually(t, 30*time.Second, "no set of ours left, the Lease gone", func() error {
		list, err := dyn.Resource(res).List(context.Background(), metav1.ListOptions{LabelSelector: ownership.ManagedBy + "=" + app.Name})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d sets of ours left", len(list.Items))
		}
		_, err = local.Client.CoordinationV1().Leases(cfg.LeaderElection.Namespace).Get(context.Background(), cfg.LeaderElection.LeaseName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Lease: %w", err)
		}
		return nil
	})
	if _, err := dyn.Resource(res).Get(context.Background(), foreign.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's set: %v", err)
	}
	u.Stop()
}
