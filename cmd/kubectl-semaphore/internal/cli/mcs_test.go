package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mcsapi"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// A service mirror that serves the Multi-Cluster Services API (serviceMirror.mcs.enabled) in a
// cluster without the API's CRDs: status shows no exports nor imports, which cannot be read,
// and says under Problems how to install the CRDs, in -o json too; check fails mcs-api with
// that fix and its runbook, and skips mcs-exports and mcs-conflicts, saying why.
func TestStatusAndCheckSayHowToInstallTheMCSCRDs(t *testing.T) {
	gcp := unanswered(t, true)
	deleteMCSCRDs(t, gcp)
	run := commandOn(gcp)

	problem := "the service mirror serves the Multi-Cluster Services API (SEMAPHORE_MCS_ENABLED=true), but the cluster does not serve multicluster.x-k8s.io/v1beta1 (no serviceexports, serviceimports): install the Multi-Cluster Services CRDs"
	code, out, errOut := run("status")
	t.Logf("status:\n%s", out)
	if code != 0 || strings.Contains(out, "SERVICE EXPORT") || !strings.Contains(out, problem) {
		t.Errorf("status: exit %d, want no exports and the problem %q\n%s\n%s", code, problem, out, errOut)
	}
	code, out, errOut = run("status", "-o", "json")
	var states []mesh.ClusterState
	if err := json.Unmarshal([]byte(out), &states); code != 0 || err != nil || len(states) != 1 {
		t.Fatalf("status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if mc := states[0].MultiCluster; mc != nil || !strings.Contains(strings.Join(states[0].Problems, "\n"), problem) {
		t.Errorf("status -o json: multiCluster %+v, problems %q", mc, states[0].Problems)
	}

	code, out, errOut = run("check", "-o", "json")
	var results []check.Result
	if err := json.Unmarshal([]byte(out), &results); code != 1 || err != nil {
		t.Fatalf("check -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	byCheck := map[string]check.Result{}
	for _, r := range results {
		byCheck[r.Check] = r
	}
	if r := byCheck[check.MCSAPI]; r.OK || r.Component != "service-mirror" || !strings.HasSuffix(r.Runbook, "#check-mcs-api") ||
		!strings.Contains(r.Message, "has SEMAPHORE_MCS_ENABLED=true, but the cluster does not serve multicluster.x-k8s.io/v1beta1") ||
		!strings.Contains(r.Message, "kubectl apply --server-side -f charts/semaphore/charts/service-mirror/crds/") {
		t.Errorf("mcs-api: %+v, want a failure saying how to install the CRDs", r)
	}
	for _, name := range []string{check.MCSExports, check.MCSConflicts} {
		if r := byCheck[name]; !r.OK || r.Warning || !strings.Contains(r.Message, "the cluster does not serve multicluster.x-k8s.io/v1beta1 (see mcs-api): skipped") {
			t.Errorf("%s: %+v, want it skipped", name, r)
		}
	}
}

// deleteMCSCRDs deletes the Multi-Cluster Services CRDs the chart installed in c, and waits until
// the API server no longer serves them.
func deleteMCSCRDs(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	ctx := context.Background()
	crds := dynamic.NewForConfigOrDie(c.Config).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, name := range []string{"serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io"} {
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "the API server stops serving the Multi-Cluster Services API", func() error {
		missing, err := mcsapi.Missing(c.Client.Discovery())
		if err == nil && len(missing) != 2 {
			err = fmt.Errorf("still served: all but %v", missing)
		}
		return err
	})
}
