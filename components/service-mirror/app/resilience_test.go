package app_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/resilience"
)

// TestResilience runs the resilience suite against semaphore-service-mirror: a source is a
// remote Service with one EndpointSlice per address family, an endpoint a member; its local
// objects are its mirror Service and slices.
func TestResilience(t *testing.T) {
	resilience.Run(t, resilience.Component[app.Config]{
		MetricsPrefix:    app.MetricsPrefix,
		Queue:            "service_mirror",
		Clusters:         clusters,
		ObjectsPerSource: 2,

		Config:   newConfig,
		Election: func(cfg *app.Config) *config.LeaderElection { return &cfg.LeaderElection },
		Start: func(t *testing.T, cfg app.Config) *resilience.Instance {
			r := start(t, cfg)
			return &resilience.Instance{Registry: r.App.Registry, AdminAddr: r.App.AdminAddr(), Stop: r.Stop}
		},

		Namespace: rsRemoteNamespace,
		Create: func(t *testing.T, src resilience.Source, members ...string) {
			remoteService(t, clusters.Remote(src.Cluster), src.Namespace, src.Name, nil)
			rsSetEndpoints(t, src, members...)
		},
		Change:   rsSetEndpoints,
		Delete:   rsDeleteService,
		InRemote: rsRemoteHas,

		Has: func(cfg app.Config, src resilience.Source, members ...string) error {
			families := map[discoveryv1.AddressType]bool{}
			for _, a := range rsAddresses(members) {
				families[rsFamily(a)] = true
			}
			return rsMirrored(cfg, src, len(families), rsReadyEndpoints(rsAddresses(members)...))
		},
		Gone:     func(cfg app.Config, src resilience.Source) error { return mirrorGone(cfg, src) },
		Versions: rsObjectVersions,
		Owns: func(src resilience.Source, key string) (owned, updated bool) {
			svc := mirror.ServiceName(src)
			for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
				if key == "EndpointSlice/"+mirror.SliceName(svc, rsSliceName(src, family)) {
					return true, true
				}
			}
			return key == "Service/"+svc, false
		},
		Writes: rsMirrorWrites,
		Key: func(e testenv.AuditEvent) string {
			kind := map[string]string{"services": "Service", "endpointslices": "EndpointSlice"}[e.ObjectRef.Resource]
			if kind == "" {
				return ""
			}
			return kind + "/" + e.ObjectRef.Name
		},
		InSync: rsInSync,
		Varied: rsVaried,
	})
}

// rsRemoteNamespace creates the test's namespace suffix in c and deletes the Services and
// EndpointSlices in it when the test ends (no namespace controller runs here, so deleting the
// namespace would not delete them).
func rsRemoteNamespace(t *testing.T, c *testenv.Cluster, suffix string) string {
	t.Helper()
	ns := fixture.Namespace(t, suffix)
	if err := c.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		svcs, err := c.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, s := range svcs.Items {
				_ = c.Client.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
		}
		_ = c.Client.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	return ns
}

// rsAddresses are the addresses of members, each of which holds one or comma-separated ones.
func rsAddresses(members []string) []string {
	var out []string
	for _, m := range members {
		out = append(out, strings.Split(m, ",")...)
	}
	return out
}

func rsFamily(addr string) discoveryv1.AddressType {
	if netip.MustParseAddr(addr).Is4() {
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

// rsSetEndpoints gives the Service of src one slice per address family of members, named
// after it, holding a ready endpoint for each address of that family; an existing slice is
// updated, and emptied when members have no address of its family. The admin client it uses
// bypasses the proxy: the controller cannot see the change while the proxy is cut.
func rsSetEndpoints(t *testing.T, src resilience.Source, members ...string) {
	t.Helper()
	c := clusters.Remote(src.Cluster)
	ctx := context.Background()
	eps := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
	for _, a := range rsAddresses(members) {
		eps[rsFamily(a)] = append(eps[rsFamily(a)], endpoint(a))
	}
	slices, err := c.Client.DiscoveryV1().EndpointSlices(src.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + src.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slices.Items {
		s.Endpoints = eps[s.AddressType]
		delete(eps, s.AddressType)
		if _, err := c.Client.DiscoveryV1().EndpointSlices(src.Namespace).Update(ctx, &s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for family, e := range eps {
		remoteSlice(t, c, src.Namespace, src.Name, rsSliceName(src, family), family, e...)
	}
}

// rsSliceName is the name of the slice of family of src.
func rsSliceName(src resilience.Source, family discoveryv1.AddressType) string {
	return src.Name + "-" + strings.ToLower(string(family))
}

// rsDeleteService deletes the Service of src and its slices.
func rsDeleteService(t *testing.T, src resilience.Source) {
	t.Helper()
	c := clusters.Remote(src.Cluster)
	ctx := context.Background()
	if err := c.Client.CoreV1().Services(src.Namespace).Delete(ctx, src.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := c.Client.DiscoveryV1().EndpointSlices(src.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + src.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rsRemoteHas is nil when the Service of src is still in its remote.
func rsRemoteHas(src resilience.Source) error {
	_, err := clusters.Remote(src.Cluster).Client.CoreV1().Services(src.Namespace).Get(context.Background(), src.Name, metav1.GetOptions{})
	return err
}

// rsInSync is nil when the controller's inventory of remote shows want selected Services, all
// of them mirrored and nothing else: the drift gauge exists and is 0.
func rsInSync(t *testing.T, r *resilience.Instance, remote string, want int) error {
	t.Helper()
	l := map[string]string{"remote": remote}
	if !metricPresent(t, r.Registry, rsDrift, l) {
		return fmt.Errorf("no %s series for %s yet", rsDrift, remote)
	}
	drift := metricValue(t, r.Registry, rsDrift, l)
	selected := metricValue(t, r.Registry, app.MetricsPrefix+"_remote_services", l)
	mirrors := metricValue(t, r.Registry, app.MetricsPrefix+"_mirrors", l)
	if drift != 0 || selected != float64(want) || mirrors != float64(want) {
		return fmt.Errorf("%s: drift %v, remote services %v, mirrors %v; want 0, %d, %d", remote, drift, selected, mirrors, want, want)
	}
	return nil
}

const rsDrift = app.MetricsPrefix + "_mirror_drift"

// rsMirrored is nil when the mirror of src exists with nSlices slices holding exactly the
// addresses of want (address → ready).
func rsMirrored(cfg app.Config, src mirror.Source, nSlices int, want map[string]bool) error {
	_, slices, err := mirrorOf(cfg, src)
	if err != nil {
		return err
	}
	if len(slices) != nSlices {
		return fmt.Errorf("mirror of %s has %d slices, want %d", src, len(slices), nSlices)
	}
	if got := addressesOf(slices); !maps.Equal(got, want) {
		return fmt.Errorf("mirror of %s has addresses %v, want %v", src, got, want)
	}
	return nil
}

// rsObjectVersions returns "kind/name" → "uid/resourceVersion" of the mirror objects of remote
// in cfg's namespace.
func rsObjectVersions(t *testing.T, cfg app.Config, remote string) map[string]string {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: mirror.LabelCluster + "=" + remote}
	svcs, err := local.Client.CoreV1().Services(cfg.Namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	sls, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range svcs.Items {
		out["Service/"+s.Name] = string(s.UID) + "/" + s.ResourceVersion
	}
	for _, s := range sls.Items {
		out["EndpointSlice/"+s.Name] = string(s.UID) + "/" + s.ResourceVersion
	}
	return out
}

// rsMirrorWrites returns the write requests the service mirror made to objects in its mirror
// namespace (Leases left out, see WritesBut).
func rsMirrorWrites(t *testing.T, cfg app.Config) testenv.AuditEvents {
	t.Helper()
	var out testenv.AuditEvents
	for _, e := range local.WritesBut(t, app.Name) {
		if e.ObjectRef.Namespace == cfg.Namespace {
			out = append(out, e)
		}
	}
	return out
}

func rsReadyEndpoints(addrs ...string) map[string]bool {
	out := map[string]bool{}
	for _, a := range addrs {
		out[a] = true
	}
	return out
}

// rsVaried makes remote Services of every shape: dual-stack with three slices and a
// not-ready endpoint, headless with hostnames, over 100 endpoints in one slice, NodePort with
// session affinity, and LoadBalancer with a defaulted targetPort and an empty slice.
func rsVaried(t *testing.T, cfg *app.Config) resilience.Varied {
	nsA := rsRemoteNamespace(t, aws, "src")
	nsG := rsRemoteNamespace(t, gcp, "src")
	type expect struct {
		slices int
		addrs  map[string]bool
	}
	want := map[mirror.Source]expect{}

	// Dual-stack, three slices (two IPv4, one IPv6), a not-ready endpoint.
	remoteService(t, aws, nsA, "multi", func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	})
	notReady := endpoint("10.40.0.5")
	notReady.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(true)}
	remoteSlice(t, aws, nsA, "multi", "multi-a", discoveryv1.AddressTypeIPv4, endpoint("10.40.0.1"), endpoint("10.40.0.2"), endpoint("10.40.0.3"))
	remoteSlice(t, aws, nsA, "multi", "multi-b", discoveryv1.AddressTypeIPv4, endpoint("10.40.0.4"), notReady)
	remoteSlice(t, aws, nsA, "multi", "multi-v6", discoveryv1.AddressTypeIPv6, endpoint("fd00:40::1"), endpoint("fd00:40::2"))
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "multi"}] = expect{3, map[string]bool{
		"10.40.0.1": true, "10.40.0.2": true, "10.40.0.3": true, "10.40.0.4": true, "10.40.0.5": false,
		"fd00:40::1": true, "fd00:40::2": true,
	}}

	// Headless, StatefulSet-like: hostnames, not-ready addresses published.
	remoteService(t, aws, nsA, "headless", func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.PublishNotReadyAddresses = true
	})
	var hs []discoveryv1.Endpoint
	for i := range 3 {
		e := endpoint(fmt.Sprintf("10.41.0.%d", i+1))
		e.Hostname = ptr.To(fmt.Sprintf("web-%d", i))
		hs = append(hs, e)
	}
	remoteSlice(t, aws, nsA, "headless", "headless-1", discoveryv1.AddressTypeIPv4, hs...)
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "headless"}] = expect{1, rsReadyEndpoints("10.41.0.1", "10.41.0.2", "10.41.0.3")}

	// Over 100 endpoints in one slice, and a second slice.
	remoteService(t, aws, nsA, "big", nil)
	var big []discoveryv1.Endpoint
	bigAddrs := map[string]bool{}
	for i := range 150 {
		a := fmt.Sprintf("10.42.%d.%d", i/100, i%100+1)
		big = append(big, endpoint(a))
		bigAddrs[a] = true
	}
	remoteSlice(t, aws, nsA, "big", "big-1", discoveryv1.AddressTypeIPv4, big...)
	remoteSlice(t, aws, nsA, "big", "big-2", discoveryv1.AddressTypeIPv4, endpoint("10.42.9.1"), endpoint("10.42.9.2"))
	bigAddrs["10.42.9.1"], bigAddrs["10.42.9.2"] = true, true
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "big"}] = expect{2, bigAddrs}

	// NodePort with session affinity: the mirror is ClusterIP without node ports.
	remoteService(t, aws, nsA, "nodeport", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	})
	remoteSlice(t, aws, nsA, "nodeport", "nodeport-1", discoveryv1.AddressTypeIPv4, endpoint("10.43.0.1"))
	want[mirror.Source{Cluster: "aws", Namespace: nsA, Name: "nodeport"}] = expect{1, rsReadyEndpoints("10.43.0.1")}

	// LoadBalancer with a single unnamed port whose targetPort the API server defaults, and a
	// slice without endpoints.
	remoteService(t, gcp, nsG, "lb", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports = []corev1.ServicePort{{Port: 443}}
	})
	remoteSlice(t, gcp, nsG, "lb", "lb-1", discoveryv1.AddressTypeIPv4, endpoint("10.50.0.1"))
	remoteSlice(t, gcp, nsG, "lb", "lb-empty", discoveryv1.AddressTypeIPv4)
	want[mirror.Source{Cluster: "gcp", Namespace: nsG, Name: "lb"}] = expect{2, rsReadyEndpoints("10.50.0.1")}

	return resilience.Varied{
		Converged: func() error {
			for src, w := range want {
				if err := rsMirrored(*cfg, src, w.slices, w.addrs); err != nil {
					return err
				}
			}
			return nil
		},
		PerRemote: map[string]int{"aws": 4, "gcp": 1},
		// 5 Services and 9 slices.
		Creates: 14,
	}
}
