package check_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcscontroller"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// mcsCase is a state of gcp and what one check of the Multi-Cluster Services API makes of it.
type mcsCase struct {
	name         string
	check        string
	fails, warns bool
	says         string
}

// expect checks gcp with opts and checks the result of c: the service mirror's, about the
// cluster, with a runbook when it is not fine.
func (c mcsCase) expect(t *testing.T, s inSync, opts check.Options) {
	t.Helper()
	r := resultOf(t, s.run(t, opts), c.check, "", release.ServiceMirror)
	if r.OK == c.fails || r.Warning != c.warns || !strings.Contains(r.Message, c.says) || r.Cluster != "gcp" || (!r.OK || r.Warning) != (r.Runbook != "") {
		t.Errorf("%s: %+v\nwant ok=%v warning=%v, a runbook when not fine, and saying %q", c.name, r, !c.fails, c.warns, c.says)
	}
}

// exportIn creates in gcp the ServiceExport se and returns a function that deletes it.
func exportIn(t *testing.T, se *mcsv1beta1.ServiceExport) func() {
	t.Helper()
	clustertest.Create(t, gcp, se)
	return func() {
		client, err := mcscontroller.NewClient(gcp.Config)
		if err == nil {
			err = client.MulticlusterV1beta1().ServiceExports(se.Namespace).Delete(context.Background(), se.Name, metav1.DeleteOptions{})
		}
		if err != nil {
			t.Error(err)
		}
	}
}

// The Multi-Cluster Services API: where the service mirror does not serve it, its checks say so
// and pass, but ServiceExports that nothing serves are a warning. Where it does, the cluster
// serves the API (the chart's CRDs) and the service mirror's pods say they serve it
// (semaphore_service_mirror_mcs_api_served); every local ServiceExport is valid, one naming no
// Service failing with its reason, and ready, one without conditions a warning; one in
// conflict is a warning that names what the clusters define differently.
func TestMCSChecksSayWhatTheServiceMirrorServes(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	if err := gcp.EnsureNamespace(context.Background(), "sys-log"); err != nil {
		t.Fatal(err)
	}
	opts := s.fromPods(s.pods)
	for _, name := range []string{check.MCSAPI, check.MCSExports, check.MCSConflicts} {
		mcsCase{name: "off", check: name, says: "does not serve the Multi-Cluster Services API (SEMAPHORE_MCS_ENABLED is not true"}.expect(t, s, opts)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "fwd", Port: 24224}}}}
	merged := &mcs.Import{From: "gcp"}
	defer exportIn(t, clustertest.ServiceExport("sys-log", "fluentd", svc, merged))()
	mcsCase{name: "off, with a ServiceExport", check: check.MCSExports, warns: true,
		says: "but the cluster has 1 ServiceExports (sys-log/fluentd): set serviceMirror.mcs.enabled=true"}.expect(t, s, opts)

	setEnv(t, gcp, "semaphore-service-mirror", release.MCSEnabledEnv, "true")
	defer setEnv(t, gcp, "semaphore-service-mirror", release.MCSEnabledEnv, "false")
	served := func(v float64) check.Options {
		return s.fromPods(s.pods.with(only("service-mirror", func(m metricLines) { m["semaphore_service_mirror_mcs_api_served"] = v })))
	}
	for _, c := range []struct {
		mcsCase
		opts check.Options
	}{
		{mcsCase{name: "served", check: check.MCSAPI,
			says: "the cluster serves multicluster.x-k8s.io/v1beta1, and pod semaphore-service-mirror-0 serves it (semaphore_service_mirror_mcs_api_served 1)"}, served(1)},
		{mcsCase{name: "not found by the service mirror", check: check.MCSAPI, fails: true,
			says: "pod semaphore-service-mirror-0 says semaphore_service_mirror_mcs_api_served 0"}, served(0)},
		{mcsCase{name: "a service mirror without the metric", check: check.MCSAPI, warns: true,
			says: "pod semaphore-service-mirror-0 export no semaphore_service_mirror_mcs_api_served"}, opts},
		{mcsCase{name: "valid and ready", check: check.MCSExports, says: "1 ServiceExports, each valid and ready"}, opts},
		{mcsCase{name: "no conflict", check: check.MCSConflicts, says: "no ServiceExport in conflict (1 ServiceExports)"}, opts},
	} {
		c.expect(t, s, c.opts)
	}

	conflict := &mcs.Import{From: "aws", Conflicts: []mcsv1beta1.ServiceExportConditionReason{mcsv1beta1.ServiceExportReasonPortConflict, mcsv1beta1.ServiceExportReasonTypeConflict}}
	defer exportIn(t, clustertest.ServiceExport("sys-log", "echo", svc, conflict))()
	defer exportIn(t, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "sys-log"}})()
	mcsCase{name: "in conflict", check: check.MCSConflicts, warns: true,
		says: "1 ServiceExports in conflict, sys-log/echo: its ports and types (headless or not) differ (PortConflict,TypeConflict)"}.expect(t, s, opts)
	mcsCase{name: "not synced yet", check: check.MCSExports, warns: true,
		says: "1 ServiceExports without conditions (the service mirror has not synced them) (sys-log/new)"}.expect(t, s, opts)
	defer exportIn(t, clustertest.ServiceExport("sys-log", "gone", nil, nil))()
	mcsCase{name: "not valid", check: check.MCSExports, fails: true,
		says: "1 ServiceExports not valid (sys-log/gone (NoService: no Service of this name in the namespace)); 1 ServiceExports without conditions"}.expect(t, s, opts)
}
