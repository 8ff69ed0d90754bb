package testbed_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// TestCoreDNSDocs checks that the Corefile in docs/coredns.md, run by a real CoreDNS against a
// real API server, resolves <name>.<namespace>.svc.cluster.<remote> to the mirror Services the
// service-mirror creates and <name>.<namespace>.svc.cluster.global to its global Services, and
// does what the doc says about everything else.
func TestCoreDNSDocs(t *testing.T) {
	const ns = "semaphore"
	// The Corefile's multicluster option needs the MCS API's CRDs (docs/coredns.md): without
	// them CoreDNS answers SERVFAIL where the names below want NXDOMAIN.
	c := testenv.Start(t, testenv.Options{CRDDirs: []string{testbed.MCSCRDs()}}, "local")[0]
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
	// And the names of global services.
	glFluentd := global.Key{Namespace: "sys-log", Name: "fluentd"}
	glPG := global.Key{Namespace: "db", Name: "pg"}
	glLong := global.Key{Namespace: "observability-platform", Name: "fluentd-aggregator-europe-west-1"}
	for k, want := range map[global.Key]string{glFluentd: "gl-sys-log-73736d-fluentd", glPG: "gl-db-73736d-pg"} {
		if got := global.ServiceName(k); got != want {
			t.Fatalf("global.ServiceName(%v) = %q, want %q: docs/coredns.md relies on it", k, got, want)
		}
	}
	glLongName := global.ServiceName(glLong)
	if glLongName == "gl-"+glLong.Namespace+"-73736d-"+glLong.Name {
		t.Fatalf("global.ServiceName(%v) = %q is not shortened: the test needs a longer name", glLong, glLongName)
	}

	clusterIP := func(name string) string { return createService(ctx, t, c, ns, name, "") }
	fluentdIP := clusterIP(mirror.ServiceName(fluentd))
	longIP := clusterIP(longName)
	// The global Services, made here by hand as the service mirror would (without its labels,
	// which DNS does not read).
	glFluentdIP := clusterIP(global.ServiceName(glFluentd))
	glLongIP := clusterIP(glLongName)
	// What the mirror rule would make of fluentd.sys-log.svc.cluster.global if it took "global"
	// for a remote: it must not be the answer.
	decoyIP := clusterIP("global-sys-log-73736d-fluentd")

	headless := func(name string) { createService(ctx, t, c, ns, name, corev1.ClusterIPNone) }
	slice := func(service, name string, labels map[string]string, endpoints ...discoveryv1.Endpoint) {
		t.Helper()
		labels[discoveryv1.LabelServiceName] = service
		labels[discoveryv1.LabelManagedBy] = mirror.SliceManager
		createSlice(ctx, t, c, ns, name, labels, postgresPort, endpoints...)
	}
	// A headless mirror with two ready endpoints and one that is not ready.
	pgName := mirror.ServiceName(pg)
	headless(pgName)
	slice(pgName, pgName+"-1", map[string]string{},
		endpoint("pg-0", "198.18.0.10", true),
		endpoint("pg-1", "198.18.0.11", true),
		endpoint("pg-2", "198.18.0.12", false))
	// A headless global service with a slice from each of two clusters, both of which run a
	// StatefulSet pod pg-0.
	glPGName := global.ServiceName(glPG)
	headless(glPGName)
	slice(glPGName, glPGName+"-aws", map[string]string{global.LabelCluster: "aws"},
		endpoint("pg-0", "198.18.1.10", true),
		endpoint("pg-1", "198.18.1.11", false))
	slice(glPGName, glPGName+"-gcp", map[string]string{global.LabelCluster: "gcp"},
		endpoint("pg-0", "198.18.2.10", true),
		endpoint("pg-1", "198.18.2.11", true))
	kubeIP := kubernetesServiceIP(ctx, t, c)

	addr := testenv.StartCoreDNS(t, testenv.CorefileFromDocs(t, c.Kubeconfig, ns))

	for _, tc := range []struct {
		name string
		want []string
	}{
		{"fluentd.sys-log.svc.cluster.aws", []string{fluentdIP}},
		{"FluentD.Sys-Log.svc.cluster.AWS", []string{fluentdIP}},
		{"pg.db.svc.cluster.gcp", []string{"198.18.0.10", "198.18.0.11"}},
		{"pg-1.pg.db.svc.cluster.gcp", []string{"198.18.0.11"}},
		{"fluentd.sys-log.svc.cluster.global", []string{glFluentdIP}},
		{"FluentD.Sys-Log.svc.cluster.GLOBAL", []string{glFluentdIP}},
		{"pg.db.svc.cluster.global", []string{"198.18.1.10", "198.18.2.10", "198.18.2.11"}},
		{"pg-0.pg.db.svc.cluster.global", []string{"198.18.1.10", "198.18.2.10"}},
		{"pg-1.pg.db.svc.cluster.global", []string{"198.18.2.11"}},
		// The mirrors' own names, and the local cluster's names, are untouched.
		{"aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local", []string{fluentdIP}},
		{longName + ".semaphore.svc.cluster.local", []string{longIP}},
		{"gl-sys-log-73736d-fluentd.semaphore.svc.cluster.local", []string{glFluentdIP}},
		{glLongName + ".semaphore.svc.cluster.local", []string{glLongIP}},
		{"global-sys-log-73736d-fluentd.semaphore.svc.cluster.local", []string{decoyIP}},
		{"kubernetes.default.svc.cluster.local", []string{kubeIP}},
	} {
		expectAddresses(ctx, t, addr, tc.name, tc.want...)
	}

	resolver := testbed.Resolver(addr)
	for query, target := range map[string]string{
		"fluentd.sys-log.svc.cluster.aws.":    "aws-sys-log-73736d-fluentd",
		"fluentd.sys-log.svc.cluster.global.": "gl-sys-log-73736d-fluentd",
	} {
		// answer auto: the answer is for the name asked, not for the mirror's (Go's resolver
		// reports the owner name of the A record as the canonical name).
		if cname, err := resolver.LookupCNAME(ctx, query); err != nil || cname != query {
			t.Errorf("LookupCNAME(%s) = %q, %v; want the name itself", query, cname, err)
		}
		// SRV records come back with the Service's own name as their target.
		if _, srvs, err := resolver.LookupSRV(ctx, "forward", "tcp", query); err != nil {
			t.Errorf("LookupSRV(_forward._tcp.%s): %v", query, err)
		} else if len(srvs) != 1 || srvs[0].Target != target+".semaphore.svc.cluster.local." || srvs[0].Port != 24224 {
			t.Errorf("LookupSRV(_forward._tcp.%s) = %+v; want one record for port 24224 at %s", query, srvs, target)
		}
	}

	// Names without a mirror or global Service do not exist.
	for _, name := range []string{
		"nothere.sys-log.svc.cluster.aws", "fluentd.sys-log.svc.cluster.gcp", "pg-2.pg.db.svc.cluster.gcp",
		"nothere.sys-log.svc.cluster.global", "fluentd.db.svc.cluster.global", "pg-2.pg.db.svc.cluster.global",
	} {
		expectNXDOMAIN(ctx, t, addr, name, 0)
	}
	// A shortened name cannot be derived: the rewritten name is not a valid DNS name and
	// CoreDNS answers SERVFAIL, as docs/coredns.md says.
	for _, query := range []string{
		long.Name + "." + long.Namespace + ".svc.cluster." + long.Cluster,
		glLong.Name + "." + glLong.Namespace + ".svc.cluster.global",
	} {
		expectSERVFAIL(ctx, t, addr, query)
	}
}

// The ports of the tests' Services: fluentd's forward and pg's postgres.
var (
	forwardPort  = corev1.ServicePort{Name: "forward", Port: 24224, Protocol: corev1.ProtocolTCP}
	postgresPort = corev1.ServicePort{Name: "postgres", Port: 5432, Protocol: corev1.ProtocolTCP}
)

// createService creates Service ns/name in c, headless when clusterIP is "None", with one
// port: forwardPort when it has a ClusterIP, postgresPort when headless. It returns the
// ClusterIP.
func createService(ctx context.Context, t *testing.T, c *testenv.Cluster, ns, name, clusterIP string) string {
	t.Helper()
	port := forwardPort
	if clusterIP == corev1.ClusterIPNone {
		port = postgresPort
	}
	svc, err := c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{port}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// endpoint is a StatefulSet pod's endpoint: hostname at ip, ready or not.
func endpoint(hostname, ip string, ready bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
	if hostname != "" {
		e.Hostname = ptr.To(hostname)
	}
	return e
}

// createSlice creates the IPv4 EndpointSlice ns/name in c with labels, port and endpoints.
func createSlice(ctx context.Context, t *testing.T, c *testenv.Cluster, ns, name string, labels map[string]string, port corev1.ServicePort, endpoints ...discoveryv1.Endpoint) {
	t.Helper()
	if _, err := c.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port.Name), Port: ptr.To(port.Port), Protocol: ptr.To(port.Protocol)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubernetesServiceIP is the ClusterIP of Service default/kubernetes, which the API server
// creates shortly after it starts.
func kubernetesServiceIP(ctx context.Context, t *testing.T, c *testenv.Cluster) string {
	t.Helper()
	var kube *corev1.Service
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		kube, err = c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("waiting for Service default/kubernetes: %v", err)
	}
	return kube.Spec.ClusterIP
}

// expectAddresses waits up to 30 s for the CoreDNS at addr to resolve name to want (sorted),
// and fails the test when it does not. CoreDNS may start answering before its caches hold
// everything (answering SERVFAIL then), so the first answer is not taken.
func expectAddresses(ctx context.Context, t *testing.T, addr, name string, want ...string) {
	t.Helper()
	var got []string
	var err error
	// Until the test's context ends, after which every case fails at once.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got, err = testbed.LookupHost(ctx, addr, name)
		if (err == nil && slices.Equal(got, want)) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LookupHost(%s) = %v, %v; want %v", name, got, err, want)
	}
}

// expectNXDOMAIN fails the test unless the CoreDNS at addr answers NXDOMAIN for name, waiting
// up to within for it (0: the first answer counts).
func expectNXDOMAIN(ctx context.Context, t *testing.T, addr, name string, within time.Duration) {
	t.Helper()
	var got []string
	var err error
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		got, err = testbed.LookupHost(ctx, addr, name)
		if isNXDOMAIN(err) || !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
	}
	if !isNXDOMAIN(err) {
		t.Errorf("LookupHost(%s) = %v, %v; want NXDOMAIN", name, got, err)
	}
}

// expectSERVFAIL fails the test unless the CoreDNS at addr answers SERVFAIL for name (which
// Go's resolver reports as "server misbehaving").
func expectSERVFAIL(ctx context.Context, t *testing.T, addr, name string) {
	t.Helper()
	got, err := testbed.LookupHost(ctx, addr, name)
	if dnsErr := (*net.DNSError)(nil); !errors.As(err, &dnsErr) || dnsErr.IsNotFound || dnsErr.Err != "server misbehaving" {
		t.Errorf("LookupHost(%s) = %v, %v; want SERVFAIL (server misbehaving)", name, got, err)
	}
}

// isNXDOMAIN reports whether err is a lookup's NXDOMAIN.
func isNXDOMAIN(err error) bool {
	dnsErr := (*net.DNSError)(nil)
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// TestCorefileRewrites applies the rewrite rules of docs/coredns.md as CoreDNS does (the query
// lower-cased, the first rule that matches, {n} replaced by the regex's groups) to many names:
// <name>.<namespace>.svc.cluster.<remote> becomes the mirror's name and
// <name>.<namespace>.svc.cluster.global the global Service's, as the controller computes them,
// up to the lengths the doc gives; cluster.global is never taken for a remote, and local names
// are left alone.
func TestCorefileRewrites(t *testing.T) {
	corefile, err := testbed.DocsCorefile()
	if err != nil {
		t.Fatal(err)
	}
	rules := docRewrites(t, corefile)
	if len(rules) != 2 {
		t.Fatalf("docs/coredns.md has %d rewrite rules, want 2 (mirrors, global services)", len(rules))
	}
	const suffix = ".semaphore.svc.cluster.local."
	type want struct {
		rewritten string
		rule      int // index of the rule that must match
	}
	cases := map[string]want{}
	pad := func(n int) string { return strings.Repeat("a", n) }
	for _, k := range []struct{ ns, name string }{
		{"sys-log", "fluentd"}, {"db", "pg"}, {"a", "b"}, {"ns-1", "svc-2"}, {"0ns", "9svc"},
		// At the doc's limits: 54 characters of remote, namespace and name for a mirror of
		// remote aws, 52 of namespace and name for a global service.
		{pad(20), pad(54 - 3 - 20)}, {pad(20), pad(52 - 20)},
	} {
		for _, remote := range []string{"aws", "gcp", "merit"} {
			src := mirror.Source{Cluster: remote, Namespace: k.ns, Name: k.name}
			if len(remote)+len(k.ns)+len(k.name) > 54 {
				continue
			}
			q := k.name + "." + k.ns + ".svc.cluster." + remote + "."
			cases[q] = want{mirror.ServiceName(src) + suffix, 0}
			cases["pg-0."+q] = want{"pg-0." + mirror.ServiceName(src) + suffix, 0}
		}
		key := global.Key{Namespace: k.ns, Name: k.name}
		q := k.name + "." + k.ns + ".svc.cluster.global."
		cases[q] = want{global.ServiceName(key) + suffix, 1}
		cases["pg-0."+q] = want{"pg-0." + global.ServiceName(key) + suffix, 1}
		cases["_http._tcp."+strings.ToUpper(q)] = want{"_http._tcp." + global.ServiceName(key) + suffix, 1}
	}
	// One character more and the controller shortens the names: the rewrite cannot derive them.
	ns, over := pad(20), pad(54-3-20+1)
	if got := mirror.ServiceName(mirror.Source{Cluster: "aws", Namespace: ns, Name: over}); got == "aws-"+ns+"-73736d-"+over {
		t.Errorf("mirror.ServiceName of %d characters of remote, namespace and name is not shortened: docs/coredns.md says 54 is the most", 3+len(ns)+len(over))
	}
	over = pad(52 - 20 + 1)
	if got := global.ServiceName(global.Key{Namespace: ns, Name: over}); got == "gl-"+ns+"-73736d-"+over {
		t.Errorf("global.ServiceName of %d characters of namespace and name is not shortened: docs/coredns.md says 52 is the most", len(ns)+len(over))
	}
	for q, w := range cases {
		got, rule := applyRewrites(rules, q)
		if got != w.rewritten || rule != w.rule {
			t.Errorf("%s rewritten by rule %d to %s, want rule %d to %s", q, rule, got, w.rule, w.rewritten)
		}
	}
	// Left alone: local names, clusters not listed, and the mirrors' and global Services' own
	// names; "global" is never a remote.
	for _, q := range []string{
		"kubernetes.default.svc.cluster.local.", "aws-sys-log-73736d-fluentd.semaphore.svc.cluster.local.",
		"gl-sys-log-73736d-fluentd.semaphore.svc.cluster.local.", "fluentd.sys-log.svc.cluster.azure.",
		"fluentd.sys-log.svc.cluster.globals.", "fluentd.sys-log.svc.cluster.global.example.com.",
		"sys-log.svc.cluster.global.", "example.com.",
	} {
		if got, rule := applyRewrites(rules, q); rule != -1 {
			t.Errorf("%s rewritten by rule %d to %s, want it left alone", q, rule, got)
		}
	}
	if _, rule := applyRewrites(rules[:1], "fluentd.sys-log.svc.cluster.global."); rule != -1 {
		t.Error("the mirror rule alone takes fluentd.sys-log.svc.cluster.global.: global is not a remote")
	}
}

// CorefileFromDocs moves every rewrite target, the mirrors' and the global services', to the
// mirror namespace it is given.
func TestCorefileFromDocsMirrorNamespace(t *testing.T) {
	corefile, err := testbed.CorefileFromDocs("/etc/kubeconfig", "mirrors")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(corefile, ".semaphore.svc.cluster.local.") {
		t.Errorf("a rewrite target still names namespace semaphore:\n%s", corefile)
	}
	rules := docRewrites(t, corefile)
	for q, want := range map[string]string{
		"fluentd.sys-log.svc.cluster.aws.":    "aws-sys-log-73736d-fluentd.mirrors.svc.cluster.local.",
		"fluentd.sys-log.svc.cluster.global.": "gl-sys-log-73736d-fluentd.mirrors.svc.cluster.local.",
	} {
		if got, _ := applyRewrites(rules, q); got != want {
			t.Errorf("%s rewritten to %s, want %s", q, got, want)
		}
	}
}

// rewriteRule is a `rewrite name regex FROM TO answer auto` line.
type rewriteRule struct {
	from *regexp.Regexp
	to   string
}

// docRewrites returns the rewrite rules of corefile, each of which must be a name regex rule
// that rewrites answers back.
func docRewrites(t *testing.T, corefile string) []rewriteRule {
	t.Helper()
	var rules []rewriteRule
	for line := range strings.Lines(corefile) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "rewrite" {
			continue
		}
		if len(f) != 7 || f[1] != "name" || f[2] != "regex" || f[5] != "answer" || f[6] != "auto" {
			t.Fatalf("rewrite line %q is not `rewrite name regex FROM TO answer auto`", strings.TrimSpace(line))
		}
		re, err := regexp.Compile(f[3])
		if err != nil {
			t.Fatalf("rewrite line %q: %v", strings.TrimSpace(line), err)
		}
		rules = append(rules, rewriteRule{re, f[4]})
	}
	return rules
}

// applyRewrites is what CoreDNS's rewrite plugin does with a query for name: the name
// lower-cased, the first rule whose regex matches (rules stop by default), {n} in its target
// replaced by group n. It returns the rewritten name and the rule's index, or name and -1.
func applyRewrites(rules []rewriteRule, name string) (string, int) {
	name = strings.ToLower(name)
	for i, r := range rules {
		groups := r.from.FindStringSubmatch(name)
		if groups == nil {
			continue
		}
		s := r.to
		for n, g := range groups {
			s = strings.ReplaceAll(s, "{"+strconv.Itoa(n)+"}", g)
		}
		return s, i
	}
	return name, -1
}

// The ClusterRole of docs/coredns.md, which the lab gives its CoreDNS, lets CoreDNS list and
// watch all its kubernetes plugin reads, ServiceImports for the multicluster option included.
func TestDocsCoreDNSRoleReadsWhatTheKubernetesPluginWatches(t *testing.T) {
	role, err := testbed.DocsCoreDNSRole()
	if err != nil {
		t.Fatal(err)
	}
	if role.Name != "system:coredns" {
		t.Errorf("the ClusterRole is %q, want kubeadm's system:coredns", role.Name)
	}
	for _, want := range []struct{ group, resource string }{
		{"", "services"}, {"", "pods"}, {"", "namespaces"},
		{"discovery.k8s.io", "endpointslices"}, {"multicluster.x-k8s.io", "serviceimports"},
	} {
		for _, verb := range []string{"list", "watch"} {
			if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.APIGroups, want.group) && slices.Contains(r.Resources, want.resource) && slices.Contains(r.Verbs, verb)
			}) {
				t.Errorf("the ClusterRole does not allow %s of %s in group %q", verb, want.resource, want.group)
			}
		}
	}
}
