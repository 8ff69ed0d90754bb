package app_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// newGlobalConfig is newConfig with global services on, selecting the test's own Services.
func newGlobalConfig(t *testing.T, remotes ...string) app.Config {
	t.Helper()
	cfg := newConfig(t, remotes...)
	cfg.GlobalSelector = global.DefaultSelector + "," + testLabel + "=" + testLabelValue(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// globalService creates a global Service in c (the local cluster included), with one slice of
// endpoints at addrs unless addrs is empty.
func globalService(t *testing.T, c *testenv.Cluster, ns, name string, mutate func(*corev1.Service), addrs ...string) {
	t.Helper()
	remoteService(t, c, ns, name, func(s *corev1.Service) {
		delete(s.Labels, mirrorLabel)
		s.Labels[global.LabelGlobalService] = "true"
		if mutate != nil {
			mutate(s)
		}
	})
	var eps []discoveryv1.Endpoint
	for _, a := range addrs {
		eps = append(eps, endpoint(a))
	}
	remoteSlice(t, c, ns, name, name+"-abcde", discoveryv1.AddressTypeIPv4, eps...)
}

// globalOf returns the local global Service of k and its slices, or an error.
func globalOf(cfg app.Config, k global.Key) (*corev1.Service, []discoveryv1.EndpointSlice, error) {
	return localService(cfg, global.ServiceName(k))
}

// addressesByCluster are the addresses of the global slices, by source cluster label.
func addressesByCluster(sl []discoveryv1.EndpointSlice) map[string][]string {
	out := map[string][]string{}
	for _, s := range sl {
		c := s.Labels[global.LabelCluster]
		for _, e := range s.Endpoints {
			out[c] = append(out[c], e.Addresses...)
		}
		slices.Sort(out[c])
	}
	return out
}

// expectGlobal waits until the global slices of k hold want, by source cluster.
func expectGlobal(t *testing.T, cfg app.Config, k global.Key, want map[string][]string) (*corev1.Service, []discoveryv1.EndpointSlice) {
	t.Helper()
	var svc *corev1.Service
	var sl []discoveryv1.EndpointSlice
	eventually(t, 30*time.Second, fmt.Sprintf("global service %s with %v", k, want), func() error {
		var err error
		if svc, sl, err = globalOf(cfg, k); err != nil {
			return err
		}
		if diff := cmp.Diff(want, addressesByCluster(sl)); diff != "" {
			return fmt.Errorf("addresses by cluster (-want +got):\n%s", diff)
		}
		return nil
	})
	return svc, sl
}

// globalWrites are the writes the service mirror made to Services and EndpointSlices in its
// mirror namespace (Events left out: a new process announces a standing conflict once).
func globalWrites(t *testing.T, cfg app.Config) testenv.AuditEvents {
	t.Helper()
	var out testenv.AuditEvents
	for _, e := range rsMirrorWrites(t, cfg) {
		if e.ObjectRef.Resource != "events" {
			out = append(out, e)
		}
	}
	return out
}

// expectNoWrites checks that the service mirror writes nothing for a while.
func expectNoWrites(t *testing.T, cfg app.Config, what string) {
	t.Helper()
	expectQuiet(t, func() testenv.AuditEvents { return globalWrites(t, cfg) }, what)
}

// restartWritesNothing stops r and starts the controller again with cfg: once gauge counts want
// for cluster (it synced), writes, the writes of interest so far, gain none for a while.
func restartWritesNothing(t *testing.T, r *running, cfg app.Config, gauge, cluster string, want float64, writes func() testenv.AuditEvents) *running {
	t.Helper()
	r.Stop()
	before := len(writes())
	r = start(t, cfg)
	eventually(t, 30*time.Second, "synced after the restart", func() error {
		if got := metricValue(t, r.App.Registry, gauge, map[string]string{"source_cluster": cluster}); got != want {
			return fmt.Errorf("%s{source_cluster=%q} is %v, want %v", gauge, cluster, got, want)
		}
		return nil
	})
	expectQuiet(t, writes, "after the restart")
	if got := writes()[before:]; len(got) != 0 {
		t.Errorf("the restart made %d writes, want none:%s", len(got), got)
	}
	return r
}

// expectQuiet checks that writes, the writes of interest so far, gain none for a while.
func expectQuiet(t *testing.T, writes func() testenv.AuditEvents, what string) {
	t.Helper()
	before := writes()
	time.Sleep(1500 * time.Millisecond)
	if after := writes(); len(after) != len(before) {
		t.Errorf("%s: %d writes, want none:%s", what, len(after)-len(before), after[len(before):])
	}
}

// A Service labelled global in the local cluster and two remotes becomes one local Service,
// gl-<namespace>-73736d-<name>, with a copy of every cluster's slices labelled with their
// source; at rest and on restart nothing is written, and one endpoint change is one write.
func TestGlobalServiceServesEveryCluster(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "app")
	globalService(t, local, ns, "api", nil, "198.18.1.1")
	globalService(t, aws, ns, "api", nil, "198.18.2.1", "198.18.2.2")
	globalService(t, gcp, ns, "api", nil, "198.18.3.1")
	r := start(t, cfg)

	k := global.Key{Namespace: ns, Name: "api"}
	want := map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1", "198.18.2.2"}, "gcp": {"198.18.3.1"}}
	svc, sl := expectGlobal(t, cfg, k, want)
	if svc.Name != "gl-"+ns+"-73736d-api" || svc.Spec.Selector != nil || len(svc.Spec.Ports) != 2 {
		t.Errorf("global Service %s: selector %v, ports %v", svc.Name, svc.Spec.Selector, svc.Spec.Ports)
	}
	if got := svc.Annotations[global.AnnotationDefinitionFrom]; got != "aws" {
		t.Errorf("definition from %q, want aws (the first cluster in name order)", got)
	}
	for _, s := range sl {
		if s.Labels[global.LabelNamespace] != ns || s.Labels[global.LabelName] != "api" || s.Labels[global.LabelCluster] == "" {
			t.Errorf("slice %s labels %v: no source", s.Name, s.Labels)
		}
		if s.Endpoints[0].Hints != nil {
			t.Errorf("slice %s has hints %v without local-first routing", s.Name, s.Endpoints[0].Hints)
		}
	}
	expectNoWrites(t, cfg, "at rest")

	before := len(globalWrites(t, cfg))
	awsSlice, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Get(context.Background(), "api-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	awsSlice.Endpoints = append(awsSlice.Endpoints, endpoint("198.18.2.3"))
	if _, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Update(context.Background(), awsSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["aws"] = append(want["aws"], "198.18.2.3")
	expectGlobal(t, cfg, k, want)
	expectNoWrites(t, cfg, "after an endpoint change")
	if got := globalWrites(t, cfg)[before:]; len(got) != 1 {
		t.Errorf("one endpoint change made %d writes, want 1:%s", len(got), got)
	}

	r = restartWritesNothing(t, r, cfg, "semaphore_service_mirror_global_endpoints", "aws", 3, func() testenv.AuditEvents { return globalWrites(t, cfg) })
	for cluster, n := range map[string]float64{"local": 1, "aws": 3, "gcp": 1} {
		if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_ready_endpoints", map[string]string{"source_cluster": cluster}); got != n {
			t.Errorf("ready endpoints of %s = %v, want %v", cluster, got, n)
		}
	}
	if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_services", nil); got != 1 {
		t.Errorf("global services gauge = %v, want 1", got)
	}
}

// A cluster whose Service loses the label, or is deleted, drops out of the global service;
// when no cluster has it, the global Service goes.
func TestGlobalServiceClustersDropOut(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	globalService(t, local, ns, "api", nil, "198.18.1.1")
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, gcp, ns, "api", nil, "198.18.3.1")
	start(t, cfg)
	k := global.Key{Namespace: ns, Name: "api"}
	expectGlobal(t, cfg, k, map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})

	svc, err := aws.Client.CoreV1().Services(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(svc.Labels, global.LabelGlobalService)
	if _, err := aws.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGlobal(t, cfg, k, map[string][]string{"local": {"198.18.1.1"}, "gcp": {"198.18.3.1"}})
	eventually(t, 30*time.Second, "definition from gcp", func() error {
		svc, _, err := globalOf(cfg, k)
		if err == nil && svc.Annotations[global.AnnotationDefinitionFrom] != "gcp" {
			err = fmt.Errorf("definition from %q", svc.Annotations[global.AnnotationDefinitionFrom])
		}
		return err
	})
	if err := gcp.Client.CoreV1().Services(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGlobal(t, cfg, k, map[string][]string{"local": {"198.18.1.1"}})
	if err := local.Client.CoreV1().Services(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "global service gone", func() error {
		if _, sl, err := globalOf(cfg, k); err == nil {
			return fmt.Errorf("still there with %d slices", len(sl))
		}
		left, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: global.LabelName + "=api"})
		if err == nil && len(left.Items) > 0 {
			err = fmt.Errorf("%d slices left", len(left.Items))
		}
		return err
	})
}

// Where the clusters define a global service differently, the first cluster in name order
// decides, the same way on every sync; the others are reported as conflicts (metric, Event)
// and nothing is rewritten back and forth.
func TestGlobalServiceConflictIsDeterministic(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "app")
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, gcp, ns, "api", func(s *corev1.Service) {
		s.Spec.Ports = s.Spec.Ports[:1]
		s.Spec.Ports[0].Port = 9999
	}, "198.18.3.1")
	r := start(t, cfg)
	k := global.Key{Namespace: ns, Name: "api"}
	svc, _ := expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})
	if got := portNumbers(svc); !slices.Equal(got, []int32{8888, 8889}) {
		t.Errorf("ports %v, want aws's 8888 and 8889", got)
	}
	eventually(t, 10*time.Second, "conflict gauge", func() error {
		if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_conflicts", map[string]string{"source_cluster": "gcp"}); got != 1 {
			return fmt.Errorf("conflicts of gcp = %v, want 1", got)
		}
		if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_conflicts", map[string]string{"source_cluster": "aws"}); got != 0 {
			return fmt.Errorf("conflicts of aws = %v, want 0", got)
		}
		return nil
	})
	eventually(t, 10*time.Second, "conflict Event", func() error {
		events, err := local.Client.CoreV1().Events(cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "GlobalServiceConflict" && strings.Contains(e.Message, "gcp") && e.InvolvedObject.Name == svc.Name {
				return nil
			}
		}
		return fmt.Errorf("no GlobalServiceConflict Event among %d", len(events.Items))
	})
	expectNoWrites(t, cfg, "with a conflict")
}

func portNumbers(svc *corev1.Service) []int32 {
	var out []int32
	for _, p := range svc.Spec.Ports {
		out = append(out, p.Port)
	}
	slices.Sort(out)
	return out
}

// With local-first routing every endpoint is hinted: the local cluster's for the zones of the
// local Nodes, the others' for a zone that is none of them. Without zones there are no hints.
func TestGlobalServiceLocalFirstHints(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	zones := []string{ns[:min(len(ns), 50)] + "-a", ns[:min(len(ns), 50)] + "-b"}
	for i, z := range zones {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-node-%d", ns, i), Labels: map[string]string{corev1.LabelTopologyZone: z}}}
		if _, err := local.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = local.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		})
	}
	localFirst := func(s *corev1.Service) { s.Labels[global.LabelRoutingStrategy] = global.LocalFirst }
	globalService(t, local, ns, "api", localFirst, "198.18.1.1")
	globalService(t, aws, ns, "api", localFirst, "198.18.2.1")
	r := start(t, cfg)
	k := global.Key{Namespace: ns, Name: "api"}
	wantHints := map[string][]string{"local": zones, "aws": {"semaphore-remote-aws"}}
	eventually(t, 30*time.Second, "zone hints", func() error {
		_, sl, err := globalOf(cfg, k)
		if err != nil {
			return err
		}
		return checkHints(sl, wantHints)
	})
	if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_local_zones", nil); got != 2 {
		t.Errorf("local zones gauge = %v, want 2", got)
	}
	// A Node moved to another zone: the local endpoints follow.
	moved, err := local.Client.CoreV1().Nodes().Get(ctx, fmt.Sprintf("%s-node-1", ns), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved.Labels[corev1.LabelTopologyZone] = zones[0][:len(zones[0])-1] + "c"
	if _, err := local.Client.CoreV1().Nodes().Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantHints["local"] = []string{zones[0], moved.Labels[corev1.LabelTopologyZone]}
	eventually(t, 30*time.Second, "zone hints after a Node moved", func() error {
		_, sl, err := globalOf(cfg, k)
		if err != nil {
			return err
		}
		return checkHints(sl, wantHints)
	})
	for i := range zones {
		if err := local.Client.CoreV1().Nodes().Delete(ctx, fmt.Sprintf("%s-node-%d", ns, i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "no hints without zones", func() error {
		_, sl, err := globalOf(cfg, k)
		if err != nil {
			return err
		}
		return checkHints(sl, map[string][]string{"local": nil, "aws": nil})
	})
}

// checkHints checks the zone hints of every endpoint, by source cluster (nil: no hints).
func checkHints(sl []discoveryv1.EndpointSlice, want map[string][]string) error {
	return checkHintsBy(sl, global.LabelCluster, want)
}

// checkHintsBy is nil when the endpoints of sl, by the cluster their label clusterLabel names,
// are hinted for the zones of want.
func checkHintsBy(sl []discoveryv1.EndpointSlice, clusterLabel string, want map[string][]string) error {
	got := map[string][]string{}
	for _, s := range sl {
		for _, e := range s.Endpoints {
			var zones []string
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					zones = append(zones, z.Name)
				}
			}
			got[s.Labels[clusterLabel]] = zones
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("zone hints by cluster (-want +got):\n%s", diff)
	}
	return nil
}

// An unreachable remote keeps its endpoints in the global service while the others' changes
// go on; a remote removed from the configuration drops out at the next start.
func TestGlobalServiceRemoteOutageAndRemoval(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, gcp, ns, "api", nil, "198.18.3.1")
	r := start(t, cfg)
	k := global.Key{Namespace: ns, Name: "api"}
	expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})

	aws.Cut(t)
	gcpSlice, err := gcp.Client.DiscoveryV1().EndpointSlices(ns).Get(ctx, "api-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gcpSlice.Endpoints = append(gcpSlice.Endpoints, endpoint("198.18.3.2"))
	if _, err := gcp.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, gcpSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}, "gcp": {"198.18.3.1", "198.18.3.2"}})
	aws.Restore(t)
	r.Stop()

	cfg.Remotes = []string{"gcp"}
	start(t, cfg)
	expectGlobal(t, cfg, k, map[string][]string{"gcp": {"198.18.3.1", "198.18.3.2"}})
	eventually(t, 30*time.Second, "definition from gcp", func() error {
		svc, _, err := globalOf(cfg, k)
		if err == nil && svc.Annotations[global.AnnotationDefinitionFrom] != "gcp" {
			err = fmt.Errorf("definition from %q", svc.Annotations[global.AnnotationDefinitionFrom])
		}
		return err
	})
}

// A local object that has a global Service's name but is not ours is left alone, and counted;
// long names are shortened to 63 characters.
func TestGlobalServiceClashAndLongNames(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	ns := fixture.Namespace(t, "app")
	ctx := context.Background()
	k := global.Key{Namespace: ns, Name: "api"}
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: global.ServiceName(k), Namespace: cfg.Namespace, Labels: map[string]string{"owner": "someone"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}},
	}
	if _, err := local.Client.CoreV1().Services(cfg.Namespace).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a-very-long-service-name-", 2) + "x"
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, aws, ns, long, nil, "198.18.2.9")
	r := start(t, cfg)
	longKey := global.Key{Namespace: ns, Name: long}
	svc, _ := expectGlobal(t, cfg, longKey, map[string][]string{"aws": {"198.18.2.9"}})
	if len(svc.Name) > 63 {
		t.Errorf("name %q is %d characters", svc.Name, len(svc.Name))
	}
	eventually(t, 10*time.Second, "clash counted", func() error {
		if got := metricValue(t, r.App.Registry, "semaphore_service_mirror_global_clashes_total", map[string]string{"kind": "Service"}); got == 0 {
			return fmt.Errorf("no clash counted")
		}
		return nil
	})
	got, err := local.Client.CoreV1().Services(cfg.Namespace).Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Labels, foreign.Labels) || got.Spec.Ports[0].Port != 1 {
		t.Errorf("the foreign Service was changed: labels %v, ports %v", got.Labels, got.Spec.Ports)
	}
	sl, err := local.Client.DiscoveryV1().EndpointSlices(cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + foreign.Name})
	if err != nil || len(sl.Items) != 0 {
		t.Errorf("slices for the foreign Service: %v, %v", sl, err)
	}
}

// A remote named "global" would take the DNS names of global services: it is refused at start,
// naming the variable, unless global services are off; a selector that selects everything is
// refused too.
func TestGlobalConfigValidation(t *testing.T) {
	cfg := newConfig(t)
	cfg.Remotes = []string{"global"}
	cfg.GlobalSelector = global.DefaultSelector
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "SEMAPHORE_REMOTES") {
		t.Errorf("remote named global: %v, want an error naming SEMAPHORE_REMOTES", err)
	}
	cfg.GlobalSelector = ""
	if err := cfg.Validate(); err != nil {
		t.Errorf("remote named global without global services: %v", err)
	}
	cfg.Remotes = nil
	for _, bad := range []string{"a in (", "!"} {
		cfg.GlobalSelector = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "SEMAPHORE_GLOBAL_LABEL_SELECTOR") {
			t.Errorf("selector %q: %v, want an error naming SEMAPHORE_GLOBAL_LABEL_SELECTOR", bad, err)
		}
	}
}

// A restart while the cluster whose definition is used cannot be read keeps that definition:
// the next cluster's differing one is not written in the meantime, and nothing is written when
// the cluster returns.
func TestGlobalServiceKeepsDefinitionWhileItsClusterIsDown(t *testing.T) {
	cfg := newGlobalConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "app")
	globalService(t, aws, ns, "api", nil, "198.18.2.1")
	globalService(t, gcp, ns, "api", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }, "198.18.3.1")
	r := start(t, cfg)
	k := global.Key{Namespace: ns, Name: "api"}
	expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})
	expectNoWrites(t, cfg, "at rest")
	r.Stop()

	aws.Cut(t)
	before := len(globalWrites(t, cfg))
	r = start(t, cfg)
	eventually(t, 30*time.Second, "a sync with aws down", func() error {
		if metricValue(t, r.App.Registry, "semaphore_service_mirror_global_reconcile_total", map[string]string{"result": "success"}) == 0 {
			return fmt.Errorf("no successful sync yet")
		}
		return nil
	})
	expectNoWrites(t, cfg, "with aws down")
	svc, _ := expectGlobal(t, cfg, k, map[string][]string{"aws": {"198.18.2.1"}, "gcp": {"198.18.3.1"}})
	if got := svc.Annotations[global.AnnotationDefinitionFrom]; got != "aws" || len(svc.Spec.Ports) != 2 {
		t.Errorf("with aws down: definition from %q with %d ports, want aws's 2", got, len(svc.Spec.Ports))
	}
	success := func() float64 {
		return metricValue(t, r.App.Registry, "semaphore_service_mirror_global_reconcile_total", map[string]string{"result": "success"})
	}
	synced := success()
	aws.Restore(t)
	// Once aws synced, every global service is synced again.
	eventually(t, 30*time.Second, "a sync after aws returned", func() error {
		if success() == synced {
			return fmt.Errorf("no sync since aws returned")
		}
		return nil
	})
	expectNoWrites(t, cfg, "after aws returned")
	if got := globalWrites(t, cfg)[before:]; len(got) != 0 {
		t.Errorf("%d writes across the restart and the outage, want none:%s", len(got), got)
	}
}

// A headless global service stays headless, and its endpoints keep their hostnames, so that
// <hostname>.<name>.<namespace>.svc.cluster.global finds each cluster's pod of that name.
func TestGlobalServiceHeadless(t *testing.T) {
	cfg := newGlobalConfig(t, "aws")
	ns := fixture.Namespace(t, "db")
	headless := func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }
	globalService(t, local, ns, "pg", headless)
	globalService(t, aws, ns, "pg", headless)
	for _, c := range []struct {
		cluster *testenv.Cluster
		addr    string
	}{{local, "198.18.1.7"}, {aws, "198.18.2.7"}} {
		ep := endpoint(c.addr)
		ep.Hostname = ptr.To("pg-0")
		remoteSlice(t, c.cluster, ns, "pg", "pg-hosts", discoveryv1.AddressTypeIPv4, ep)
	}
	start(t, cfg)
	svc, sl := expectGlobal(t, cfg, global.Key{Namespace: ns, Name: "pg"}, map[string][]string{"local": {"198.18.1.7"}, "aws": {"198.18.2.7"}})
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("global Service of a headless one has ClusterIP %q", svc.Spec.ClusterIP)
	}
	for _, s := range sl {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Hostname, "") != "pg-0" {
				t.Errorf("slice %s endpoint %v: hostname %v, want pg-0", s.Name, e.Addresses, e.Hostname)
			}
		}
	}
}
