package testbed_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/testbed"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// TestCoreDNSDocs checks that the Corefile in docs/coredns.md, run by a real CoreDNS against a
// real API server, resolves <name>.<namespace>.svc.cluster.<remote> to the mirror Services the
// service-mirror creates, and does what the doc says about everything else.
func TestCoreDNSDocs(t *testing.T) {
	const ns = "semaphore"
	c := testenv.Start(t, testenv.Options{}, "local")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}

	// The names the doc's rewrite derives must be the names the controller gives mirrors.
	fluentd := mirror.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}
	pg := mirror.Source{Cluster: "gcp", Namespace: "db", Name: "pg"}
	long := mirror.Source{Cluster: "aws", Namespace: "observability-platform", Name: "fluentd-aggregator-europe-west-1"}
	for src, want := range map[mirror.Source]string{fluentd: "aws-sys-log-73736d-fluentd", pg: "gcp-db-73736d-pg"} {
		if got := mirror.ServiceName(src); got != want {
			t.Fatalf("mirror.ServiceName(%v) = %q, want %q: docs/coredns.md relies on it", src, got, want)
		}
	}
	longName := mirror.ServiceName(long)
	if longName == long.Cluster+"-"+long.Namespace+"-73736d-"+long.Name {
		t.Fatalf("mirror.ServiceName(%v) = %q is not shortened: the test needs a longer name", long, longName)
	}

	svcs := c.Client.CoreV1().Services(ns)
	clusterIP := func(name string) string {
		t.Helper()
		svc, err := svcs.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "forward", Port: 24224, Protocol: corev1.ProtocolTCP}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc.Spec.ClusterIP
	}
	fluentdIP := clusterIP(mirror.ServiceName(fluentd))
	longIP := clusterIP(longName)

	// A headless mirror with two ready endpoints and one that is not ready.
	pgName := mirror.ServiceName(pg)
	if _, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: pgName},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports:     []corev1.ServicePort{{Name: "postgres", Port: 5432, Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoint := func(hostname, ip string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Hostname:   ptr.To(hostname),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		}
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: pgName + "-1",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: pgName,
				discoveryv1.LabelManagedBy:   mirror.SliceManager,
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			endpoint("pg-0", "198.18.0.10", true),
			endpoint("pg-1", "198.18.0.11", true),
			endpoint("pg-2", "198.18.0.12", false),
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("postgres"), Port: ptr.To[int32](5432), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server creates its own Service shortly after it starts.
	var kube *corev1.Service
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		kube, err = c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("waiting for Service default/kubernetes: %v", err)
	}

	addr := testenv.StartCoreDNS(t, testenv.CorefileFromDocs(t, c.Kubeconfig, ns))

	// CoreDNS may start answering before its caches hold everything (answering SERVFAIL
	// then): wait for the expected answer rather than take the first one.
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"fluentd.sys-log.svc.cluster.aws", []string{fluentdIP}},
		{"FluentD.Sys-Log.svc.cluster.AWS", []string{fluentdIP}},
		{"pg.db.svc.cluster.gcp", []string{"198.18.0.10", "198.18.0.11"}},
		{"pg-1.pg.db.svc.cluster.gcp", []string{"198.18.0.11"}},
		// The mirrors' own names, and the local cluster's names, are untouched.
		{"aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local", []string{fluentdIP}},
		{longName + ".semaphore.svc.cluster.local", []string{longIP}},
		{"kubernetes.default.svc.cluster.local", []string{kube.Spec.ClusterIP}},
	} {
		var got []string
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if got, err = testbed.LookupHost(ctx, addr, tc.name); err == nil && slices.Equal(got, tc.want) {
				break
			}
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("LookupHost(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}

	resolver := testbed.Resolver(addr)
	// answer auto: the answer is for the name asked, not for the mirror's (Go's resolver reports
	// the owner name of the A record as the canonical name).
	if cname, err := resolver.LookupCNAME(ctx, "fluentd.sys-log.svc.cluster.aws."); err != nil || cname != "fluentd.sys-log.svc.cluster.aws." {
		t.Errorf("LookupCNAME(fluentd.sys-log.svc.cluster.aws.) = %q, %v; want the name itself", cname, err)
	}
	// SRV records come back with the mirror's own name as their target.
	if _, srvs, err := resolver.LookupSRV(ctx, "forward", "tcp", "fluentd.sys-log.svc.cluster.aws."); err != nil {
		t.Errorf("LookupSRV(_forward._tcp.fluentd.sys-log.svc.cluster.aws.): %v", err)
	} else if len(srvs) != 1 || srvs[0].Target != "aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local." || srvs[0].Port != 24224 {
		t.Errorf("LookupSRV(_forward._tcp.fluentd.sys-log.svc.cluster.aws.) = %+v; want one record for port 24224 at the mirror", srvs)
	}

	// Names without a mirror do not exist.
	for _, name := range []string{"nothere.sys-log.svc.cluster.aws", "fluentd.sys-log.svc.cluster.gcp", "pg-2.pg.db.svc.cluster.gcp"} {
		got, err := testbed.LookupHost(ctx, addr, name)
		if dnsErr := (*net.DNSError)(nil); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("LookupHost(%s) = %v, %v; want NXDOMAIN", name, got, err)
		}
	}
	// A shortened mirror name cannot be derived: the rewritten name is not a valid DNS name
	// and CoreDNS answers SERVFAIL, as docs/coredns.md says.
	longQuery := long.Name + "." + long.Namespace + ".svc.cluster." + long.Cluster
	got, err := testbed.LookupHost(ctx, addr, longQuery)
	if dnsErr := (*net.DNSError)(nil); !errors.As(err, &dnsErr) || dnsErr.IsNotFound || dnsErr.Err != "server misbehaving" {
		t.Errorf("LookupHost(%s) = %v, %v; want SERVFAIL (server misbehaving)", longQuery, got, err)
	}
}
