package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv/fixture"
)

// newMCSConfig is newConfig with the Multi-Cluster Services API served.
func newMCSConfig(t *testing.T, remotes ...string) app.Config {
	t.Helper()
	cfg := newConfig(t, remotes...)
	cfg.MCS = true
	return cfg
}

// mcsOf is the MCS client of c.
func mcsOf(t *testing.T, c *testenv.Cluster) mcsclient.Interface {
	t.Helper()
	client, err := mcsclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// exportService creates in c a Service name with one port "http" 80 (mutate changes it), a slice
// of endpoints at addrs, and its ServiceExport.
func exportService(t *testing.T, c *testenv.Cluster, ns, name string, mutate func(*corev1.Service), addrs ...string) {
	t.Helper()
	remoteService(t, c, ns, name, func(s *corev1.Service) {
		s.Labels = nil
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
		if mutate != nil {
			mutate(s)
		}
	})
	var eps []discoveryv1.Endpoint
	for _, a := range addrs {
		eps = append(eps, endpoint(a))
	}
	s := remoteSlice(t, c, ns, name, name+"-abcde", discoveryv1.AddressTypeIPv4, eps...)
	s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	export(t, c, ns, name)
}

// export creates the ServiceExport of name in c.
func export(t *testing.T, c *testenv.Cluster, ns, name string) {
	t.Helper()
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := mcsOf(t, c).MulticlusterV1beta1().ServiceExports(ns).Create(context.Background(), se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// unexport deletes the ServiceExport of name in c.
func unexport(t *testing.T, c *testenv.Cluster, ns, name string) {
	t.Helper()
	if err := mcsOf(t, c).MulticlusterV1beta1().ServiceExports(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// imported is the local ServiceImport of k, its derived Service (nil for a headless one) and
// its slices.
type imported struct {
	si      *mcsv1beta1.ServiceImport
	derived *corev1.Service
	slices  []discoveryv1.EndpointSlice
}

func importOf(t *testing.T, k mcs.Key) (imported, error) {
	ctx := context.Background()
	var out imported
	var err error
	if out.si, err = mcsOf(t, local).MulticlusterV1beta1().ServiceImports(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{}); err != nil {
		return out, err
	}
	if svc, err := local.Client.CoreV1().Services(k.Namespace).Get(ctx, mcs.DerivedServiceName(k), metav1.GetOptions{}); err == nil {
		out.derived = svc
	}
	list, err := local.Client.DiscoveryV1().EndpointSlices(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelServiceName + "=" + k.Name})
	if err != nil {
		return out, err
	}
	out.slices = list.Items
	return out, nil
}

// bySourceCluster are the addresses of imported slices by their source-cluster label.
func bySourceCluster(sl []discoveryv1.EndpointSlice) map[string][]string {
	out := map[string][]string{}
	for _, s := range sl {
		c := s.Labels[mcsv1beta1.LabelSourceCluster]
		for _, e := range s.Endpoints {
			out[c] = append(out[c], e.Addresses...)
		}
		slices.Sort(out[c])
	}
	return out
}

// expectImport waits until the local import of k holds want, by source cluster.
func expectImport(t *testing.T, k mcs.Key, want map[string][]string) imported {
	t.Helper()
	var got imported
	eventually(t, 30*time.Second, fmt.Sprintf("ServiceImport %s with %v", k, want), func() error {
		var err error
		if got, err = importOf(t, k); err != nil {
			return err
		}
		if diff := cmp.Diff(want, bySourceCluster(got.slices)); diff != "" {
			return fmt.Errorf("addresses by source cluster (-want +got):\n%s", diff)
		}
		return nil
	})
	return got
}

// expectNoImport waits until neither the import of k, its derived Service nor a slice is left.
func expectNoImport(t *testing.T, k mcs.Key) {
	t.Helper()
	eventually(t, 30*time.Second, "no ServiceImport of "+k.String(), func() error {
		got, err := importOf(t, k)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("import: %w", err)
		}
		if got.derived != nil || len(got.slices) > 0 {
			return fmt.Errorf("derived Service %v, %d slices left", got.derived != nil, len(got.slices))
		}
		return nil
	})
}

// expectCondition waits until the local ServiceExport of k has condition typ with status and reason.
func expectCondition(t *testing.T, k mcs.Key, typ mcsv1beta1.ServiceExportConditionType, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%s=%s (%s) on %s", typ, status, reason, k), func() error {
		se, err := mcsOf(t, local).MulticlusterV1beta1().ServiceExports(k.Namespace).Get(context.Background(), k.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(se.Status.Conditions, string(typ))
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// mcsWrites are the service mirror's writes in namespace ns (Events left out).
func mcsWrites(t *testing.T, ns string) testenv.AuditEvents {
	t.Helper()
	var out testenv.AuditEvents
	for _, e := range local.WritesBut(t, app.Name) {
		if e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "events" {
			out = append(out, e)
		}
	}
	return out
}

// expectNoMCSWrites checks that the service mirror writes nothing in ns for a while.
func expectNoMCSWrites(t *testing.T, ns, what string) {
	t.Helper()
	expectQuiet(t, func() testenv.AuditEvents { return mcsWrites(t, ns) }, what)
}

// A Service exported in the local cluster and a remote is imported in its own namespace: a
// ClusterSetIP ServiceImport whose IPs are its derived Service's, with the endpoints of both
// labelled as the API says; the local export is Valid, Ready and without conflict. At rest and
// on restart nothing is written, one endpoint change is one write, and unexporting from one
// cluster, then the other, removes its endpoints, then everything.
func TestServiceExportedInTwoClustersIsImportedWithBothClustersEndpoints(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	exportService(t, local, ns, "api", nil, "198.18.1.1")
	exportService(t, aws, ns, "api", nil, "198.18.2.1", "198.18.2.2")
	r := start(t, cfg)

	k := mcs.Key{Namespace: ns, Name: "api"}
	want := map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1", "198.18.2.2"}}
	got := expectImport(t, k, want)
	if got.si.Spec.Type != mcsv1beta1.ClusterSetIP || got.derived == nil || len(got.si.Spec.IPs) == 0 ||
		!slices.Equal(got.si.Spec.IPs, got.derived.Spec.ClusterIPs) || len(got.si.Spec.IPFamilies) != len(got.si.Spec.IPs) {
		t.Errorf("import type %s, IPs %v, families %v; derived Service %v", got.si.Spec.Type, got.si.Spec.IPs, got.si.Spec.IPFamilies, got.derived)
	}
	if want := []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}; !cmp.Equal(got.si.Spec.Ports, want) {
		t.Errorf("import ports %v, want %v", got.si.Spec.Ports, want)
	}
	for _, s := range got.slices {
		if s.Labels[discoveryv1.LabelServiceName] != mcs.DerivedServiceName(k) || s.Labels[discoveryv1.LabelManagedBy] == "endpointslice-controller.k8s.io" {
			t.Errorf("slice %s labels %v", s.Name, s.Labels)
		}
	}
	expectCondition(t, k, mcsv1beta1.ServiceExportConditionValid, metav1.ConditionTrue, "Valid")
	expectCondition(t, k, mcsv1beta1.ServiceExportConditionReady, metav1.ConditionTrue, "Exported")
	expectCondition(t, k, mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionFalse, "NoConflicts")
	expectNoMCSWrites(t, ns, "at rest")

	before := len(mcsWrites(t, ns))
	s, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Get(context.Background(), "api-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = append(s.Endpoints, endpoint("198.18.2.3"))
	if _, err := aws.Client.DiscoveryV1().EndpointSlices(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["aws"] = append(want["aws"], "198.18.2.3")
	expectImport(t, k, want)
	expectNoMCSWrites(t, ns, "after an endpoint change")
	if got := mcsWrites(t, ns)[before:]; len(got) != 1 {
		t.Errorf("one endpoint change made %d writes, want 1:%s", len(got), got)
	}

	restartWritesNothing(t, r, cfg, "semaphore_service_mirror_mcs_endpoints", "aws", 3, func() testenv.AuditEvents { return mcsWrites(t, ns) })

	unexport(t, local, ns, "api")
	expectImport(t, k, map[string][]string{"aws": want["aws"]})
	unexport(t, aws, ns, "api")
	expectNoImport(t, k)
}

// Two clusters exporting a Service with different ports: the import has the union of the ports
// by name, the older export's definition of a port both have, and every export says Conflict;
// a cluster's endpoints serve only the ports it defines as the import does.
func TestServiceExportConflictOldestExportWins(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	exportService(t, local, ns, "api", nil, "198.18.1.1")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have seconds
	exportService(t, aws, ns, "api", func(s *corev1.Service) {
		s.Spec.Ports[0].Port = 81
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
	}, "198.18.2.1")
	start(t, cfg)

	k := mcs.Key{Namespace: ns, Name: "api"}
	got := expectImport(t, k, map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1"}})
	wantPorts := []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090}}
	if !cmp.Equal(got.si.Spec.Ports, wantPorts) {
		t.Errorf("import ports %v, want %v", got.si.Spec.Ports, wantPorts)
	}
	if from := got.si.Annotations[mcs.AnnotationExportFrom]; from != "local" {
		t.Errorf("properties from %q, want local (the older export)", from)
	}
	for _, s := range got.slices {
		if s.Labels[mcsv1beta1.LabelSourceCluster] == "aws" && len(s.Ports) != 0 {
			t.Errorf("aws's slice keeps ports %v: its http is 81, not the import's 80", s.Ports)
		}
	}
	expectCondition(t, k, mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionTrue, "PortConflict")
}

// An import whose properties come from a remote's export keeps them while that remote cannot be
// read: a restart while it is down rewrites nothing, though the local export, the only one then
// known, defines the Service differently.
func TestImportKeepsTheOldestExportWhileItsClusterIsDown(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	exportService(t, aws, ns, "api", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, "198.18.2.1")
	time.Sleep(1100 * time.Millisecond)
	exportService(t, local, ns, "api", nil, "198.18.1.1")
	r := start(t, cfg)
	k := mcs.Key{Namespace: ns, Name: "api"}
	got := expectImport(t, k, map[string][]string{"local": {"198.18.1.1"}, "aws": {"198.18.2.1"}})
	if got.si.Annotations[mcs.AnnotationExportFrom] != "aws" || got.si.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		t.Errorf("import from %q with affinity %s, want aws's ClientIP", got.si.Annotations[mcs.AnnotationExportFrom], got.si.Spec.SessionAffinity)
	}
	// ClientIP affinity has a timeout the API server defaults, which the local export lacks.
	expectCondition(t, k, mcsv1beta1.ServiceExportConditionConflict, metav1.ConditionTrue, "SessionAffinityConfigConflict,SessionAffinityConflict")
	expectNoMCSWrites(t, ns, "at rest")

	r.Stop()
	aws.Cut(t)
	before := len(mcsWrites(t, ns))
	start(t, cfg)
	time.Sleep(3 * time.Second)
	if got := mcsWrites(t, ns)[before:]; len(got) != 0 {
		t.Errorf("a restart while aws is down made %d writes, want none:%s", len(got), got)
	}
}

// An export the API refuses (an ExternalName Service, no Service at all) is not Valid and
// imports nothing; a Service exported into a namespace the local cluster lacks is imported
// once the namespace exists, and its import goes once the namespace is being deleted.
func TestInvalidExportsAndMissingOrDeletedNamespaces(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	remoteService(t, local, ns, "external", func(s *corev1.Service) {
		s.Labels, s.Spec = nil, corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	})
	export(t, local, ns, "external")
	export(t, local, ns, "nothing")
	elsewhere := fixture.Namespace(t, "only-aws")
	exportService(t, aws, elsewhere, "api", nil, "198.18.2.1")
	start(t, cfg)

	expectCondition(t, mcs.Key{Namespace: ns, Name: "external"}, mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, "InvalidServiceType")
	expectCondition(t, mcs.Key{Namespace: ns, Name: "nothing"}, mcsv1beta1.ServiceExportConditionValid, metav1.ConditionFalse, "NoService")
	expectNoImport(t, mcs.Key{Namespace: ns, Name: "external"})
	time.Sleep(time.Second)
	if _, err := importOf(t, mcs.Key{Namespace: elsewhere, Name: "api"}); !apierrors.IsNotFound(err) {
		t.Errorf("import in a namespace the local cluster lacks: %v", err)
	}
	if err := local.EnsureNamespace(context.Background(), elsewhere); err != nil {
		t.Fatal(err)
	}
	expectImport(t, mcs.Key{Namespace: elsewhere, Name: "api"}, map[string][]string{"aws": {"198.18.2.1"}})

	// No namespace controller runs here: the namespace stays Terminating, and only the service
	// mirror removes what it wrote in it.
	if err := local.Client.CoreV1().Namespaces().Delete(context.Background(), elsewhere, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectNoImport(t, mcs.Key{Namespace: elsewhere, Name: "api"})
}

// A remote's endpoint addresses it may not publish stay out of the imported slices, as out of
// mirrors; a ServiceImport someone else made is left alone, the clash counted.
func TestImportsKeepTheTrustRulesAndLeaveOthersObjectsAlone(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	if err := cfg.RemotePodRanges.Decode("aws:198.18.2.0/24"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "mcs")
	if err := local.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	exportService(t, aws, ns, "api", nil, "198.18.2.1", "10.96.0.10", "100.100.100.200")
	foreign := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns},
		Spec:       mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 80}}},
	}
	if _, err := mcsOf(t, local).MulticlusterV1beta1().ServiceImports(ns).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exportService(t, aws, ns, "other", nil, "198.18.2.9")
	r := start(t, cfg)

	expectImport(t, mcs.Key{Namespace: ns, Name: "api"}, map[string][]string{"aws": {"198.18.2.1"}})
	eventually(t, 30*time.Second, "the clash counted", func() error {
		if metricValue(t, r.App.Registry, "semaphore_service_mirror_mcs_clashes_total", map[string]string{"kind": "ServiceImport"}) == 0 {
			return fmt.Errorf("no clash counted")
		}
		return nil
	})
	si, err := mcsOf(t, local).MulticlusterV1beta1().ServiceImports(ns).Get(context.Background(), "other", metav1.GetOptions{})
	if err != nil || si.Spec.Type != mcsv1beta1.Headless || len(si.Labels) != 0 {
		t.Errorf("the foreign ServiceImport changed: %v %+v", err, si)
	}
}

// readyOf are the addresses of imported slices and whether each is ready.
func readyOf(t *testing.T, k mcs.Key) (map[string]bool, error) {
	got, err := importOf(t, k)
	if err != nil {
		return nil, err
	}
	return addressesOf(got.slices), nil
}

// expectReady waits until the imported slices of k hold exactly want (address → ready).
func expectReady(t *testing.T, k mcs.Key, want map[string]bool) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("import %s with %v", k, want), func() error {
		got, err := readyOf(t, k)
		if err != nil {
			return err
		}
		if !cmp.Equal(got, want) {
			return fmt.Errorf("imported %v", got)
		}
		return nil
	})
}

// A remote that goes away keeps what it exported imported: nothing is written while it is
// down, nor by a restart while it still is; its outage policy (SEMAPHORE_WITHDRAW_AFTER) marks
// its imported endpoints not ready, and ready again once it answers; once it is no longer
// configured, its endpoints go, and the import with them when no other cluster exports it.
func TestImportsThroughARemoteOutageAndTheRemotesRemoval(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	cfg.RemoteProbeInterval = 200 * time.Millisecond
	if err := cfg.WithdrawAfter.Decode("aws:2s"); err != nil {
		t.Fatal(err)
	}
	ns := fixture.Namespace(t, "mcs")
	exportService(t, local, ns, "api", nil, "198.18.1.1")
	exportService(t, aws, ns, "api", nil, "198.18.2.1")
	exportService(t, aws, ns, "only-aws", nil, "198.18.2.9")
	r := start(t, cfg)
	k, onlyAWS := mcs.Key{Namespace: ns, Name: "api"}, mcs.Key{Namespace: ns, Name: "only-aws"}
	expectReady(t, k, map[string]bool{"198.18.1.1": true, "198.18.2.1": true})
	expectReady(t, onlyAWS, map[string]bool{"198.18.2.9": true})
	expectNoMCSWrites(t, ns, "at rest")

	aws.Cut(t)
	before := len(mcsWrites(t, ns))
	expectReady(t, k, map[string]bool{"198.18.1.1": true, "198.18.2.1": false})
	expectReady(t, onlyAWS, map[string]bool{"198.18.2.9": false})
	if got := mcsWrites(t, ns)[before:]; len(got) != 2 {
		t.Errorf("withdrawing aws's endpoints made %d writes, want 2 (one per slice):%s", len(got), got)
	}

	r.Stop()
	before = len(mcsWrites(t, ns))
	r = start(t, cfg)
	testenv.Hold(t, 3*time.Second, "imports kept while aws is down at start", func() error {
		got, err := readyOf(t, onlyAWS)
		if err != nil || len(got) != 1 {
			return fmt.Errorf("import of a Service only aws exports: %v %w", got, err)
		}
		return nil
	})
	if got := mcsWrites(t, ns)[before:]; len(got) != 0 {
		t.Errorf("a start with aws down made %d writes, want none:%s", len(got), got)
	}

	if err := aws.SetReachable(true); err != nil {
		t.Fatal(err)
	}
	expectReady(t, k, map[string]bool{"198.18.1.1": true, "198.18.2.1": true})
	expectReady(t, onlyAWS, map[string]bool{"198.18.2.9": true})

	r.Stop()
	cfg = newMCSConfig(t, "gcp")
	start(t, cfg)
	expectReady(t, k, map[string]bool{"198.18.1.1": true})
	expectNoImport(t, onlyAWS)
}

// Exports that ask for trafficDistribution PreferSameZone are imported local first: the local
// endpoints hinted for every zone of the local Nodes, the others' for a zone of their own, so
// kube-proxy keeps the traffic in the cluster while a local endpoint is ready; the derived
// Service says so too. PreferClose, its deprecated name, does the same.
func TestImportPreferSameZoneHintsTheLocalEndpoints(t *testing.T) {
	cfg := newMCSConfig(t, "aws")
	ns := fixture.Namespace(t, "mcs")
	ctx := context.Background()
	zone := ns[:min(len(ns), 50)] + "-a"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node", Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
	if _, err := local.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = local.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	preferClose := func(s *corev1.Service) {
		s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
	}
	exportService(t, local, ns, "api", preferClose, "198.18.1.1")
	exportService(t, aws, ns, "api", preferClose, "198.18.2.1")
	start(t, cfg)
	k := mcs.Key{Namespace: ns, Name: "api"}
	eventually(t, 30*time.Second, "zone hints", func() error {
		got, err := importOf(t, k)
		if err != nil {
			return err
		}
		// As the API server stored the exported Service's (it may keep PreferSameZone's older name).
		exported, err := local.Client.CoreV1().Services(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.derived == nil || ptr.Deref(got.derived.Spec.TrafficDistribution, "") != ptr.Deref(exported.Spec.TrafficDistribution, "none") {
			return fmt.Errorf("derived Service with trafficDistribution %v, the exported Service's is %v", got.derived, ptr.Deref(exported.Spec.TrafficDistribution, ""))
		}
		return checkHintsBy(got.slices, mcsv1beta1.LabelSourceCluster, map[string][]string{"local": {zone}, "aws": {"semaphore-remote-aws"}})
	})
}

// A headless Service is imported Headless: no derived Service and no address of its own, the
// families of the exported Service, and its endpoints with their hostnames.
func TestHeadlessServiceIsImportedHeadless(t *testing.T) {
	cfg := newMCSConfig(t, "aws", "gcp")
	ns := fixture.Namespace(t, "mcs")
	if err := local.EnsureNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	exportService(t, aws, ns, "db", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }, "198.18.2.1")
	start(t, cfg)
	k := mcs.Key{Namespace: ns, Name: "db"}
	got := expectImport(t, k, map[string][]string{"aws": {"198.18.2.1"}})
	if got.si.Spec.Type != mcsv1beta1.Headless || len(got.si.Spec.IPs) != 0 || !slices.Equal(got.si.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) || got.derived != nil {
		t.Errorf("import type %s, IPs %v, families %v, derived Service %v; want Headless, none, [IPv4], none",
			got.si.Spec.Type, got.si.Spec.IPs, got.si.Spec.IPFamilies, got.derived)
	}
}
