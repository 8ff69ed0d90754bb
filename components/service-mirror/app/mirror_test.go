package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// A labelled remote Service with endpoints appears locally under its mirror
// name with the same ports and endpoints; two remotes with the same Service get two mirrors;
// an unlabelled Service is not mirrored.
func TestMirrorsServiceAndEndpoints(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "sys-log")
	remoteSlices := map[string]*discoveryv1.EndpointSlice{}
	for i, c := range []string{"aws", "gcp"} {
		cl := map[string]*testenv.Cluster{"aws": aws, "gcp": gcp}[c]
		remoteService(t, cl, ns, "fluentd", nil)
		notReady := endpoint(fmt.Sprintf("198.18.%d.3", i))
		notReady.Conditions.Ready = ptr.To(false)
		notReady.Conditions.Serving = ptr.To(false)
		terminating := endpoint(fmt.Sprintf("198.18.%d.4", i))
		terminating.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
		withHost := endpoint(fmt.Sprintf("198.18.%d.2", i))
		withHost.Hostname = ptr.To("fluentd-1")
		withHost.NodeName = ptr.To("remote-node-1")
		withHost.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "fluentd-1"}
		withHost.Zone = ptr.To("eu-west-1a")
		remoteSlices[c] = remoteSlice(t, cl, ns, "fluentd", "fluentd-abcde", discoveryv1.AddressTypeIPv4,
			endpoint(fmt.Sprintf("198.18.%d.1", i)), withHost, notReady, terminating)
		unlabelled := remoteService(t, cl, ns, "private", func(s *corev1.Service) { s.Labels = nil })
		remoteSlice(t, cl, ns, unlabelled.Name, "private-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.9.9"))
	}
	r := start(t, cfg)

	for _, c := range []string{"aws", "gcp"} {
		src := mirror.Source{Cluster: c, Namespace: ns, Name: "fluentd"}
		wantName := c + "-" + ns + "-73736d-fluentd"
		var svc *corev1.Service
		var slices []discoveryv1.EndpointSlice
		eventually(t, 30*time.Second, "mirror of "+src.String(), func() error {
			var err error
			svc, slices, err = mirrorOf(cfg, src)
			if err == nil && len(slices) != 1 {
				err = fmt.Errorf("%d slices", len(slices))
			}
			return err
		})
		if svc.Name != wantName {
			t.Errorf("mirror name = %q, want %q", svc.Name, wantName)
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			t.Errorf("mirror is %s with clusterIP %q, want ClusterIP with an address", svc.Spec.Type, svc.Spec.ClusterIP)
		}
		if len(svc.Spec.Selector) != 0 {
			t.Errorf("mirror has selector %v, want none", svc.Spec.Selector)
		}
		wantLabels := map[string]string{ownership.ManagedBy: ownership.ServiceMirror, mirror.LabelCluster: c, mirror.LabelNamespace: ns, mirror.LabelName: "fluentd"}
		if diff := cmp.Diff(wantLabels, svc.Labels); diff != "" {
			t.Errorf("mirror labels (-want +got):\n%s", diff)
		}
		wantPorts := []corev1.ServicePort{
			{Name: "forward", Port: 8888, TargetPort: intOrString(24224), Protocol: corev1.ProtocolTCP},
			{Name: "http", Port: 8889, TargetPort: intOrStringS("http"), Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http")},
		}
		if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
			t.Errorf("mirror ports (-want +got):\n%s", diff)
		}

		got := slices[0]
		want := remoteSlices[c]
		if got.AddressType != want.AddressType {
			t.Errorf("address type %s, want %s", got.AddressType, want.AddressType)
		}
		if diff := cmp.Diff(want.Ports, got.Ports); diff != "" {
			t.Errorf("slice ports (-want +got):\n%s", diff)
		}
		// Remote-only fields (node, pod reference, zone) are dropped; the rest is kept.
		wantEndpoints := make([]discoveryv1.Endpoint, 0, len(want.Endpoints))
		for _, e := range want.Endpoints {
			wantEndpoints = append(wantEndpoints, discoveryv1.Endpoint{Addresses: e.Addresses, Conditions: e.Conditions, Hostname: e.Hostname})
		}
		if diff := cmp.Diff(wantEndpoints, got.Endpoints); diff != "" {
			t.Errorf("slice endpoints (-want +got):\n%s", diff)
		}
		if got.Labels[discoveryv1.LabelManagedBy] != mirror.SliceManager || got.Labels[ownership.ManagedBy] != ownership.ServiceMirror {
			t.Errorf("slice labels %v lack the managed-by labels", got.Labels)
		}
		if err := mirrorGone(cfg, mirror.Source{Cluster: c, Namespace: ns, Name: "private"}); err != nil {
			t.Errorf("unlabelled Service: %v", err)
		}
	}
	eventually(t, 10*time.Second, "inventory metrics", func() error {
		for _, c := range []string{"aws", "gcp"} {
			l := map[string]string{"remote": c}
			if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_mirrors", l); v != 1 {
				return fmt.Errorf("mirrors{%s} = %v", c, v)
			}
			if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_mirrored_endpoints", l); v != 4 {
				return fmt.Errorf("mirrored_endpoints{%s} = %v", c, v)
			}
			if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_mirror_drift", l); v != 0 {
				return fmt.Errorf("mirror_drift{%s} = %v", c, v)
			}
		}
		return nil
	})
}

// Headless stays headless (with hostnames), NodePort and LoadBalancer become
// ClusterIP without node ports, IPv6 and dual-stack endpoints are carried.
func TestServiceTypesAndAddressFamilies(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := fixture.Namespace(t, "db")
	remoteService(t, aws, ns, "pg", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	host := endpoint("198.18.1.10")
	host.Hostname = ptr.To("pg-0")
	remoteSlice(t, aws, ns, "pg", "pg-abcde", discoveryv1.AddressTypeIPv4, host)
	remoteService(t, aws, ns, "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	remoteService(t, aws, ns, "lb", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	remoteService(t, aws, ns, "dual", func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	remoteSlice(t, aws, ns, "dual", "dual-v4", discoveryv1.AddressTypeIPv4, endpoint("198.18.1.20"))
	remoteSlice(t, aws, ns, "dual", "dual-v6", discoveryv1.AddressTypeIPv6, endpoint("fd00:198:18::20"))
	start(t, cfg)

	src := func(name string) mirror.Source { return mirror.Source{Cluster: "aws", Namespace: ns, Name: name} }
	eventually(t, 30*time.Second, "headless mirror", func() error {
		svc, slices, err := mirrorOf(cfg, src("pg"))
		switch {
		case err != nil:
			return err
		case svc.Spec.ClusterIP != corev1.ClusterIPNone:
			return fmt.Errorf("clusterIP %q, want None", svc.Spec.ClusterIP)
		case len(slices) != 1 || ptr.Deref(slices[0].Endpoints[0].Hostname, "") != "pg-0":
			return fmt.Errorf("slices %+v lack hostname pg-0", slices)
		}
		return nil
	})
	for _, name := range []string{"web", "lb"} {
		eventually(t, 30*time.Second, name+" mirror", func() error {
			svc, _, err := mirrorOf(cfg, src(name))
			if err != nil {
				return err
			}
			if svc.Spec.Type != corev1.ServiceTypeClusterIP {
				return fmt.Errorf("type %s, want ClusterIP", svc.Spec.Type)
			}
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					return fmt.Errorf("port %s has node port %d", p.Name, p.NodePort)
				}
			}
			return nil
		})
	}
	eventually(t, 30*time.Second, "dual-stack mirror", func() error {
		svc, slices, err := mirrorOf(cfg, src("dual"))
		if err != nil {
			return err
		}
		// The local cluster is IPv4-only: PreferDualStack lets the mirror exist anyway.
		if ptr.Deref(svc.Spec.IPFamilyPolicy, "") != corev1.IPFamilyPolicyPreferDualStack {
			return fmt.Errorf("ipFamilyPolicy %v, want PreferDualStack", ptr.Deref(svc.Spec.IPFamilyPolicy, ""))
		}
		families := map[discoveryv1.AddressType]string{}
		for _, s := range slices {
			families[s.AddressType] = s.Endpoints[0].Addresses[0]
		}
		want := map[discoveryv1.AddressType]string{discoveryv1.AddressTypeIPv4: "198.18.1.20", discoveryv1.AddressTypeIPv6: "fd00:198:18::20"}
		if diff := cmp.Diff(want, families); diff != "" {
			return fmt.Errorf("slices by family (-want +got):\n%s", diff)
		}
		return nil
	})
}

// Scale up, scale down and readiness flips propagate; over a hundred
// endpoints in several slices are carried whole.
func TestEndpointChangesPropagate(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	remoteService(t, aws, ns, "api", nil)
	var slices []*discoveryv1.EndpointSlice
	want := map[string]bool{}
	for s := range 3 {
		var eps []discoveryv1.Endpoint
		for i := range 100 {
			if s == 2 && i >= 50 {
				break
			}
			addr := fmt.Sprintf("198.18.%d.%d", 10+s, i+1)
			eps = append(eps, endpoint(addr))
			want[addr] = true
		}
		slices = append(slices, remoteSlice(t, aws, ns, "api", fmt.Sprintf("api-%d", s), discoveryv1.AddressTypeIPv4, eps...))
	}
	start(t, cfg)
	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "api"}
	expect := func(what string, want map[string]bool, nSlices int) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			_, got, err := mirrorOf(cfg, src)
			if err != nil {
				return err
			}
			if len(got) != nSlices {
				return fmt.Errorf("%d slices, want %d", len(got), nSlices)
			}
			if diff := cmp.Diff(want, addressesOf(got)); diff != "" {
				return fmt.Errorf("addresses (-want +got):\n%s", diff)
			}
			return nil
		})
	}
	expect("250 endpoints in 3 slices", want, 3)

	update := func(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		t.Helper()
		out, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Scale up.
	slices[2].Endpoints = append(slices[2].Endpoints, endpoint("198.18.12.200"))
	slices[2] = update(slices[2])
	want["198.18.12.200"] = true
	expect("scale up", want, 3)
	// Readiness flip.
	slices[0].Endpoints[0].Conditions.Ready = ptr.To(false)
	slices[0] = update(slices[0])
	want["198.18.10.1"] = false
	expect("readiness flip", want, 3)
	// Scale down: fewer endpoints in one slice, and one slice removed entirely.
	slices[1].Endpoints = slices[1].Endpoints[:10]
	slices[1] = update(slices[1])
	for i := 11; i <= 100; i++ {
		delete(want, fmt.Sprintf("198.18.11.%d", i))
	}
	expect("scale down", want, 3)
	if err := aws.Client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, slices[2].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for a := range want {
		if strings.HasPrefix(a, "198.18.12.") {
			delete(want, a)
		}
	}
	expect("slice removed", want, 2)
}

// Removing the label, deleting the Service, or deleting its namespace removes
// the mirror and its slices.
func TestMirrorRemoval(t *testing.T) {
	cfg := newConfig(t, "aws")
	ctx := context.Background()
	ns := fixture.Namespace(t, "a")
	doomedNS := fixture.Namespace(t, "doomed")
	for _, name := range []string{"unlabel", "deleted"} {
		remoteService(t, aws, ns, name, nil)
		remoteSlice(t, aws, ns, name, name+"-1", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.1"))
	}
	remoteService(t, aws, doomedNS, "svc", nil)
	remoteSlice(t, aws, doomedNS, "svc", "svc-1", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.2"))
	remoteService(t, aws, ns, "kept", nil)
	remoteSlice(t, aws, ns, "kept", "kept-1", discoveryv1.AddressTypeIPv4, endpoint("198.18.2.3"))
	start(t, cfg)

	srcs := map[string]mirror.Source{
		"unlabel": {Cluster: "aws", Namespace: ns, Name: "unlabel"},
		"deleted": {Cluster: "aws", Namespace: ns, Name: "deleted"},
		"doomed":  {Cluster: "aws", Namespace: doomedNS, Name: "svc"},
		"kept":    {Cluster: "aws", Namespace: ns, Name: "kept"},
	}
	for what, src := range srcs {
		eventually(t, 30*time.Second, "mirror of "+what, func() error {
			_, slices, err := mirrorOf(cfg, src)
			if err == nil && len(slices) != 1 {
				err = fmt.Errorf("%d slices", len(slices))
			}
			return err
		})
	}

	svc, err := aws.Client.CoreV1().Services(ns).Get(ctx, "unlabel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(svc.Labels, mirrorLabel)
	if _, err := aws.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := aws.Client.CoreV1().Services(ns).Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kube-controller-manager runs here, so do what its namespace controller does when a
	// namespace is deleted: delete what the namespace holds, then the namespace finalizes.
	if err := aws.Client.CoreV1().Namespaces().Delete(ctx, doomedNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := aws.Client.DiscoveryV1().EndpointSlices(doomedNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := aws.Client.CoreV1().Services(doomedNS).Delete(ctx, "svc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, what := range []string{"unlabel", "deleted", "doomed"} {
		eventually(t, 30*time.Second, "removal of the mirror of "+what, func() error { return mirrorGone(cfg, srcs[what]) })
	}
	if _, slices, err := mirrorOf(cfg, srcs["kept"]); err != nil || len(slices) != 1 {
		t.Errorf("mirror of an untouched Service: %v, %d slices", err, len(slices))
	}
}

// Names over 63 characters get a deterministic shortened name that works and
// does not collide with another mirror.
func TestLongNamesAreShortened(t *testing.T) {
	cfg := newConfig(t, "aws")
	ns := "a-namespace-with-a-rather-long-name-for-mirroring" // 49 characters
	long1 := "a-service-name-that-is-long-enough-to-overflow-one"
	long2 := "a-service-name-that-is-long-enough-to-overflow-two"
	for _, n := range []string{long1, long2} {
		remoteService(t, aws, ns, n, nil)
		remoteSlice(t, aws, ns, n, n+"-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.3.1"))
	}
	start(t, cfg)
	seen := map[string]string{}
	for _, n := range []string{long1, long2} {
		src := mirror.Source{Cluster: "aws", Namespace: ns, Name: n}
		eventually(t, 30*time.Second, "mirror of "+n, func() error {
			svc, slices, err := mirrorOf(cfg, src)
			if err != nil {
				return err
			}
			if len(svc.Name) > 63 || len(slices) != 1 || len(slices[0].Name) > 63 {
				return fmt.Errorf("service %q, %d slices", svc.Name, len(slices))
			}
			if !strings.HasPrefix(svc.Name, "aws-"+ns[:20]) {
				return fmt.Errorf("shortened name %q lost its readable prefix", svc.Name)
			}
			if other, ok := seen[svc.Name]; ok && other != n {
				return fmt.Errorf("%q and %q share mirror name %q", n, other, svc.Name)
			}
			seen[svc.Name] = n
			if svc.Labels[mirror.LabelName] != n {
				return fmt.Errorf("source label %q", svc.Labels[mirror.LabelName])
			}
			return nil
		})
		if mirror.ServiceName(src) != mirror.ServiceName(mirror.Source{Cluster: "aws", Namespace: ns, Name: n}) {
			t.Fatal("mirror name is not deterministic")
		}
	}
	if len(seen) != 2 {
		t.Fatalf("want 2 distinct mirror names, got %v", seen)
	}
}

// A local Service or EndpointSlice that has a mirror's name but is not ours
// is never changed or deleted; the clash is logged, counted and recorded as an Event. Once
// the foreign object goes, the mirror takes its place.
func TestNameClashLeavesForeignObjectsAlone(t *testing.T) {
	cfg := newConfig(t, "aws")
	ctx := context.Background()
	ns := fixture.Namespace(t, "x")
	remoteService(t, aws, ns, "svc", nil)
	remoteSlice(t, aws, ns, "svc", "svc-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.4.1"))
	remoteService(t, aws, ns, "other", nil)
	remoteSlice(t, aws, ns, "other", "other-abcde", discoveryv1.AddressTypeIPv4, endpoint("198.18.4.2"))
	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "svc"}
	other := mirror.Source{Cluster: "aws", Namespace: ns, Name: "other"}

	// Someone else's Service with the mirror's name, and someone else's slice with the name
	// the mirror slice of "other" would take.
	foreign, err := local.Client.CoreV1().Services(cfg.Namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: mirror.ServiceName(src), Labels: map[string]string{"owner": "someone-else"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1234}}, Selector: map[string]string{"app": "theirs"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreignSlice, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: mirror.SliceName(mirror.ServiceName(other), "other-abcde"), Labels: map[string]string{"owner": "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint("192.0.2.99")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg)

	eventually(t, 30*time.Second, "clashes counted", func() error {
		if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_clashes_total", map[string]string{"remote": "aws", "kind": "Service"}); v < 1 {
			return fmt.Errorf("Service clashes = %v", v)
		}
		if v := metricValue(t, r.App.Registry, "semaphore_service_mirror_clashes_total", map[string]string{"remote": "aws", "kind": "EndpointSlice"}); v < 1 {
			return fmt.Errorf("EndpointSlice clashes = %v", v)
		}
		return nil
	})
	eventually(t, 30*time.Second, "clash events", func() error {
		events, err := local.Client.CoreV1().Events(cfg.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		found := map[string]bool{}
		for _, e := range events.Items {
			if e.Reason == "MirrorNameClash" && e.Type == corev1.EventTypeWarning {
				found[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] = true
			}
		}
		for _, want := range []string{"Service/" + foreign.Name, "EndpointSlice/" + foreignSlice.Name} {
			if !found[want] {
				return fmt.Errorf("no MirrorNameClash event for %s (have %v)", want, found)
			}
		}
		return nil
	})
	// The mirror of "other" exists (its Service had no clash), only its clashing slice is
	// missing; both foreign objects are untouched.
	eventually(t, 30*time.Second, "mirror of other", func() error {
		_, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, mirror.ServiceName(other), metav1.GetOptions{})
		return err
	})
	time.Sleep(time.Second)
	got, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != foreign.ResourceVersion {
		t.Fatalf("foreign Service changed or gone: %v (resourceVersion %s, was %s)", err, got.ResourceVersion, foreign.ResourceVersion)
	}
	gotSlice, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).Get(ctx, foreignSlice.Name, metav1.GetOptions{})
	if err != nil || gotSlice.ResourceVersion != foreignSlice.ResourceVersion {
		t.Fatalf("foreign EndpointSlice changed or gone: %v", err)
	}

	// When the foreign Service goes, the mirror takes the name.
	if err := local.Client.CoreV1().Services(cfg.Namespace).Delete(ctx, foreign.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "mirror after the foreign Service left", func() error {
		svc, slices, err := mirrorOf(cfg, src)
		if err != nil {
			return err
		}
		if !ownership.IsManagedBy(svc.Labels, ownership.ServiceMirror) || len(slices) != 1 {
			return fmt.Errorf("labels %v, %d slices", svc.Labels, len(slices))
		}
		return nil
	})
}

// A remote's endpoint addresses it may not publish (a metadata address, addresses outside the
// ranges configured for it) stay out of its mirror, so the mirror's name never leads to them;
// an endpoint left without an address goes; each refusal is counted once. The remote's honest
// endpoints are mirrored. (The API server itself refuses loopback and link-local endpoint
// addresses, 169.254.169.254 among them, from a remote that runs a conforming one; Alibaba
// Cloud's metadata address it takes.)
func TestEndpointsTheRemoteMayNotPublishAreNotMirrored(t *testing.T) {
	cfg := newConfig(t, "aws", "gcp")
	if err := cfg.RemotePodRanges.Decode("aws:198.18.1.0/24"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "sys-log")
	remoteService(t, aws, ns, "fluentd", nil)
	mixed := endpoint("198.18.1.8")
	mixed.Addresses = []string{"198.18.1.8", "198.18.9.8"} // one address of two outside the ranges
	remoteSlice(t, aws, ns, "fluentd", "fluentd-abcde", discoveryv1.AddressTypeIPv4,
		endpoint("198.18.1.7"), endpoint("100.100.100.200"), endpoint("10.96.0.1"), mixed)
	r := start(t, cfg)

	src := mirror.Source{Cluster: "aws", Namespace: ns, Name: "fluentd"}
	eventually(t, 30*time.Second, "mirror with the honest endpoints only", func() error {
		_, slices, err := mirrorOf(cfg, src)
		if err != nil {
			return err
		}
		if got := addressesOf(slices); fmt.Sprint(got) != fmt.Sprint(map[string]bool{"198.18.1.7": true, "198.18.1.8": true}) {
			return fmt.Errorf("mirrored %v", got)
		}
		return nil
	})
	refused := func(reason string) float64 {
		return metricValue(t, r.App.Registry, "semaphore_service_mirror_refused_addresses_total", map[string]string{"remote": "aws", "reason": reason})
	}
	eventually(t, 10*time.Second, "refusals counted", func() error {
		if special, outside := refused(addrguard.ReasonSpecial), refused(addrguard.ReasonOutsideRanges); special != 1 || outside != 2 {
			return fmt.Errorf("refused: %v special, %v outside the ranges; want 1 and 2", special, outside)
		}
		return nil
	})
}
