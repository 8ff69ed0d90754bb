package testbed_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// The Corefile of docs/coredns.md, run by a real CoreDNS against a real API server with no
// more access than the doc's ClusterRole, answers the Multi-Cluster Services names
// <name>.<namespace>.svc.clusterset.local from ServiceImports and the EndpointSlices labelled
// for them, in the forms the doc lists, until the import is deleted; the same CoreDNS still
// resolves the rewritten cluster.<remote> and cluster.global names and the local ones. Without
// the MCS CRDs it answers SERVFAIL for names it does not know, as the doc warns.
func TestCoreDNSDocsAnswersClusterSetNamesWithItsClusterRole(t *testing.T) {
	const mirrorNS = "semaphore"
	c := testenv.Start(t, testenv.Options{}, "local")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range []string{mirrorNS, "sys-log", "db"} {
		if err := c.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if err := testbed.GrantCoreDNSAccess(ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "coredns-kubeconfig")
	if err := c.AddCoreDNSUser(kubeconfig); err != nil {
		t.Fatal(err)
	}
	corefile := testenv.CorefileFromDocs(t, kubeconfig, mirrorNS)
	kubeIP := kubernetesServiceIP(ctx, t, c)

	t.Run("without the MCS CRDs unknown names are SERVFAIL", func(t *testing.T) {
		addr := testenv.StartCoreDNS(t, corefile)
		expectAddresses(ctx, t, addr, "kubernetes.default.svc.cluster.local", kubeIP)
		expectSERVFAIL(ctx, t, addr, "nothere.default.svc.cluster.local")
	})
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{testbed.MCSCRDs()}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}

	imports := mcsclient.NewForConfigOrDie(c.Config).MulticlusterV1beta1()
	createImport := func(ns, name string, typ mcsv1beta1.ServiceImportType, port corev1.ServicePort, ips ...string) {
		t.Helper()
		if _, err := imports.ServiceImports(ns).Create(ctx, &mcsv1beta1.ServiceImport{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mcsv1beta1.ServiceImportSpec{
				Type:  typ,
				IPs:   ips,
				Ports: []mcsv1beta1.ServicePort{{Name: port.Name, Protocol: port.Protocol, Port: port.Port}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// One EndpointSlice per source cluster, labelled as the service mirror labels them.
	mcsSlice := func(ns, service, cluster string, port corev1.ServicePort, endpoints ...discoveryv1.Endpoint) {
		t.Helper()
		labels := mcs.Labels(mcs.Key{Namespace: ns, Name: service})
		labels[mcsv1beta1.LabelSourceCluster] = cluster
		// For kube-proxy, the derived Service: the clusterset.local names do not depend on it.
		labels[discoveryv1.LabelServiceName] = mcs.DerivedServiceName(mcs.Key{Namespace: ns, Name: service})
		createSlice(ctx, t, c, ns, service+"-"+cluster, labels, port, endpoints...)
	}
	createImport("sys-log", "fluentd", mcsv1beta1.ClusterSetIP, forwardPort, "198.18.10.1")
	mcsSlice("sys-log", "fluentd", "aws", forwardPort, endpoint("", "198.18.3.1", true))
	mcsSlice("sys-log", "fluentd", "gcp", forwardPort, endpoint("", "198.18.4.1", true))
	createImport("db", "pg", mcsv1beta1.Headless, postgresPort)
	mcsSlice("db", "pg", "aws", postgresPort, endpoint("pg-0", "198.18.1.10", true), endpoint("pg-1", "198.18.1.11", false))
	mcsSlice("db", "pg", "gcp", postgresPort, endpoint("pg-0", "198.18.2.10", true), endpoint("pg-1", "198.18.2.11", true))
	// A mirror and a global service of fluentd, for the rewrites beside the MCS names.
	mirrorIP := createService(ctx, t, c, mirrorNS, mirror.ServiceName(mirror.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}), "")
	globalIP := createService(ctx, t, c, mirrorNS, global.ServiceName(global.Key{Namespace: "sys-log", Name: "fluentd"}), "")

	addr := testenv.StartCoreDNS(t, corefile)
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"fluentd.sys-log.svc.clusterset.local", []string{"198.18.10.1"}},
		{"pg.db.svc.clusterset.local", []string{"198.18.1.10", "198.18.2.10", "198.18.2.11"}},
		{"pg-0.aws.pg.db.svc.clusterset.local", []string{"198.18.1.10"}},
		{"pg-0.gcp.pg.db.svc.clusterset.local", []string{"198.18.2.10"}},
		{"pg-1.gcp.pg.db.svc.clusterset.local", []string{"198.18.2.11"}},
		// An endpoint without a hostname goes by its address with dashes.
		{"198-18-3-1.aws.fluentd.sys-log.svc.clusterset.local", []string{"198.18.3.1"}},
		{"fluentd.sys-log.svc.cluster.aws", []string{mirrorIP}},
		{"fluentd.sys-log.svc.cluster.global", []string{globalIP}},
		{"kubernetes.default.svc.cluster.local", []string{kubeIP}},
	} {
		expectAddresses(ctx, t, addr, tc.name, tc.want...)
	}

	resolver := testbed.Resolver(addr)
	expectSRV(ctx, t, resolver, forwardPort.Name, "fluentd.sys-log.svc.clusterset.local.", "fluentd.sys-log.svc.clusterset.local.:24224")
	expectSRV(ctx, t, resolver, postgresPort.Name, "pg.db.svc.clusterset.local.",
		"pg-0.aws.pg.db.svc.clusterset.local.:5432", "pg-0.gcp.pg.db.svc.clusterset.local.:5432", "pg-1.gcp.pg.db.svc.clusterset.local.:5432")

	// Names no ready endpoint or ServiceImport is behind; NXDOMAIN also says that CoreDNS's
	// caches, ServiceImports' included, are filled with the doc's ClusterRole (SERVFAIL if not).
	for _, name := range []string{
		"pg-1.aws.pg.db.svc.clusterset.local", // not ready
		"pg-0.pg.db.svc.clusterset.local",     // without its cluster
		"pg-0.azure.pg.db.svc.clusterset.local",
		"nothere.db.svc.clusterset.local",
		"pg.sys-log.svc.clusterset.local",
		"nothere.default.svc.cluster.local",
	} {
		expectNXDOMAIN(ctx, t, addr, name, 0)
	}

	// Deleting the imports takes their names away, EndpointSlices or not, sooner than the 30 s
	// the cache plugin would keep an answer: the doc disables it for clusterset.local.
	for ns, name := range map[string]string{"sys-log": "fluentd", "db": "pg"} {
		if err := imports.ServiceImports(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fluentd.sys-log.svc.clusterset.local", "pg.db.svc.clusterset.local", "pg-0.aws.pg.db.svc.clusterset.local"} {
		expectNXDOMAIN(ctx, t, addr, name, 15*time.Second)
	}
	expectAddresses(ctx, t, addr, "fluentd.sys-log.svc.cluster.aws", mirrorIP)
}

// expectSRV fails the test unless the CoreDNS behind resolver answers the SRV query
// _<port>._tcp.<name> with records for exactly want ("target:port", in any order).
func expectSRV(ctx context.Context, t *testing.T, resolver *net.Resolver, port, name string, want ...string) {
	t.Helper()
	_, srvs, err := resolver.LookupSRV(ctx, port, "tcp", name)
	var got []string
	for _, srv := range srvs {
		got = append(got, fmt.Sprintf("%s:%d", srv.Target, srv.Port))
	}
	slices.Sort(got)
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LookupSRV(_%s._tcp.%s) = %v, %v; want %v", port, name, got, err, want)
	}
}
