package mesh_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mcs"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Collect reads what the controllers would have made in gcp, a consumer of aws: made here by
// hand as the controllers make it (a mirror with one unready endpoint, a global service with
// endpoints from both clusters, a network set), the peers of a running wireguard pod from its
// metrics, a pending one as a problem; whether aws answers each controller from the metrics of
// its pods (the service mirror's leader, named by its Lease; policy's one pod, which aws does not
// answer; the running agent), without a connection to aws's address in gcp's Secrets. With
// ProbeRemotes, it asks aws from here with each component's credentials, which reach it until
// it is cut off.
func TestCollect(t *testing.T) {
	cs := testenv.Start(t, testenv.Options{CRDDirs: []string{clustertest.CalicoCRDs()}}, "aws", "gcp")
	aws, gcp := cs[0], cs[1]
	ctx := context.Background()

	// Through aws's proxy, so that the test can cut it off, and a forwarder that counts the
	// connections to the address in gcp's Secrets.
	proxied, err := clientcmd.BuildConfigFromFlags("", aws.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fwd := forward(t, strings.TrimPrefix(proxied.Host, "https://"))
	server := "https://" + fwd.addr
	clustertest.Link(t, aws, gcp, "aws", "gcp", server)

	// A mirror of aws's sys-log/fluentd with two endpoints, one not ready.
	remoteSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd", Namespace: "sys-log"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "fwd", Port: 24224}}},
	}
	remoteSlice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "fluentd-abcde"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.1.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
	}
	clustertest.Mirror(t, gcp, "aws", remoteSvc, remoteSlice)
	// A global service app/api with two endpoints from aws and one of gcp's own.
	localSlice := remoteSlice.DeepCopy()
	localSlice.Endpoints = localSlice.Endpoints[:1]
	clustertest.GlobalService(t, gcp, global.Key{Namespace: "app", Name: "api"}, "aws", remoteSvc,
		map[string][]*discoveryv1.EndpointSlice{"aws": {remoteSlice}, "gcp": {localSlice}})
	// A network set of aws's pods labelled sys-log/fluentd, and a set that is not ours.
	clustertest.Create(t, gcp,
		clustertest.NetworkSet(netset.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}, "10.1.0.1/32", "10.1.0.2/32"),
		&calico.GlobalNetworkSet{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}, Spec: calico.GlobalNetworkSetSpec{Nets: []string{"192.0.2.0/24"}}})
	metrics, now := componentPods(t, gcp)

	sources := mesh.Sources{Client: gcp.Client, Dynamic: dynamic.NewForConfigOrDie(gcp.Config), Metrics: metrics, Timeout: 2 * time.Second,
		Now: func() time.Time { return now }}
	st, err := mesh.Collect(ctx, sources)
	if err != nil {
		t.Fatal(err)
	}
	if n := fwd.conns.Load(); n != 0 {
		t.Errorf("Collect made %d connections to the remote's address in the Secrets, want none", n)
	}
	user := "system:serviceaccount:semaphore-remote:semaphore-remote-gcp"
	want := mesh.ClusterState{
		Cluster: "gcp",
		Components: []string{
			"Deployment semaphore/semaphore-policy", "Deployment semaphore/semaphore-service-mirror", "DaemonSet semaphore/semaphore-wireguard",
		},
		Nodes: []string{"gcp-1", "gcp-2"},
		Remotes: []mesh.RemoteState{{
			Name: "aws",
			Access: []mesh.Access{
				{Component: "policy", LastSync: now.Add(-5 * time.Second), Error: "pod semaphore-policy-0 says semaphore_policy_remote_up is 0: the remote did not answer its last probe of /readyz"},
				{Component: "service-mirror", Reachable: true, User: user, LastSync: now.Add(-5 * time.Second)},
				{Component: "wireguard", Reachable: true, User: user, LastSync: now.Add(-5 * time.Second)},
			},
			Mirrors:     []mesh.Mirror{{Name: "aws-sys-log-73736d-fluentd", Source: "sys-log/fluentd", Endpoints: 2, Ready: 1}},
			NetworkSets: []mesh.NetworkSet{{Name: "aws-sys-log-fluentd", Source: "sys-log/fluentd", Nets: 2}},
			Peers: []mesh.Peer{
				{Node: "gcp-1", Remote: "aws", Peer: "aws-1", LastHandshake: time.Unix(1795982400, 0).UTC()},
				{Node: "gcp-1", Remote: "aws", Peer: "aws-2"},
			},
		}},
		GlobalServices: []mesh.GlobalService{{Name: "gl-app-73736d-api", Service: "app/api", Endpoints: map[string]int{"aws": 2, "gcp": 1}}},
		Problems:       []string{"wireguard pod semaphore/wireguard-gcp-2 on node gcp-2 is Pending: its peers are not known"},
	}
	// The workloads' names follow the chart's fullname; compare them loosely.
	ignoreComponents := cmpopts.IgnoreFields(mesh.ClusterState{}, "Components")
	if diff := cmp.Diff(want, st, ignoreComponents); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if len(st.Components) != 3 {
		t.Errorf("components %v, want the three controllers", st.Components)
	}

	// Probed, aws is reachable with each component's credentials, asked from here.
	sources.ProbeRemotes = true
	st, err = mesh.Collect(ctx, sources)
	if err != nil {
		t.Fatal(err)
	}
	if fwd.conns.Load() == 0 {
		t.Error("probing the remotes made no connection to the remote's address in the Secrets")
	}
	want.ProbedRemotes = true
	want.Remotes[0].Access = []mesh.Access{
		{Component: "policy", Reachable: true, User: user},
		{Component: "service-mirror", Reachable: true, User: user},
		{Component: "wireguard", Reachable: true, User: user},
	}
	if diff := cmp.Diff(want, st, ignoreComponents); diff != "" {
		t.Errorf("probed state (-want +got):\n%s", diff)
	}

	// Cut off, aws is unreachable with every component's credentials; the rest is still read.
	aws.Cut(t)
	st, err = mesh.Collect(ctx, sources)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Remotes) != 1 || st.Remotes[0].Reachable() || len(st.Remotes[0].Mirrors) != 1 {
		t.Fatalf("aws cut off: %+v", st.Remotes)
	}
	for _, a := range st.Remotes[0].Access {
		if a.Reachable || !strings.Contains(a.Error, server) {
			t.Errorf("aws cut off, %s: reachable %v, error %q (want one naming %s)", a.Component, a.Reachable, a.Error, server)
		}
	}

	// Without the controllers, Collect says where it looked.
	if _, err := mesh.Collect(ctx, mesh.Sources{Client: aws.Client, Namespace: "semaphore-remote"}); err == nil || !strings.Contains(err.Error(), "namespace semaphore-remote") {
		t.Errorf("no controllers: error %v", err)
	}
}

// componentPods makes in gcp the pods of its controllers as their workloads would (no kubelet
// runs them), and returns their metrics as of the time it returns: two service mirrors, of which
// the Lease names the first the leader, the other a standby that never synced; one policy pod,
// which aws does not answer; two wireguard pods, one running, one pending.
func componentPods(t *testing.T, gcp *testenv.Cluster) (staticMetrics, time.Time) {
	t.Helper()
	ctx := context.Background()
	components, err := release.Find(ctx, gcp.Client, "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]release.Component{}
	for _, c := range components {
		byName[c.Name] = c
	}
	running := func(c release.Component, name, node string, phase corev1.PodPhase) {
		pod := clustertest.ComponentPod(t, gcp, c, name, node)
		pod.Status.Phase = phase
		clustertest.UpdatePodStatus(t, gcp, pod)
	}
	mirror := byName[release.ServiceMirror]
	running(mirror, "semaphore-service-mirror-a", "gcp-1", corev1.PodRunning)
	running(mirror, "semaphore-service-mirror-b", "gcp-2", corev1.PodRunning)
	running(byName[release.Policy], "semaphore-policy-0", "gcp-1", corev1.PodRunning)
	running(byName[release.WireGuard], "wireguard-gcp-1", "gcp-1", corev1.PodRunning)
	running(byName[release.WireGuard], "wireguard-gcp-2", "gcp-2", corev1.PodPending)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: mirror.Env["SEMAPHORE_LEADER_ELECT_LEASE_NAME"], Namespace: mirror.Namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("semaphore-service-mirror-a")},
	}
	if _, err := gcp.Client.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	now := time.Unix(1795982460, 0).UTC()
	synced := now.Add(-5 * time.Second)
	return staticMetrics{
		"semaphore-service-mirror-a": viewOfAWS("semaphore_service_mirror", 1, synced),
		"semaphore-service-mirror-b": viewOfAWS("semaphore_service_mirror", 1, time.Unix(0, 0)),
		"semaphore-policy-0":         viewOfAWS("semaphore_policy", 0, synced),
		"wireguard-gcp-1": viewOfAWS("semaphore_wg", 1, synced) + `# TYPE semaphore_wg_peer_last_handshake_timestamp_seconds gauge
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-1",remote="aws"} 1.7959824e+09
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-2",remote="aws"} 0
`}, now
}

// viewOfAWS is what a component's pod (prefix, its metrics') says of remote aws: whether aws
// answered its last probe, when it last synced its view of it, and, answered, who it is there.
func viewOfAWS(prefix string, up int, synced time.Time) string {
	text := prefix + `_remote_up{remote="aws"} ` + strconv.Itoa(up) + "\n" +
		prefix + `_remote_last_sync_timestamp_seconds{remote="aws"} ` + strconv.FormatInt(synced.Unix(), 10) + "\n"
	if up == 1 {
		text += prefix + `_remote_identity_info{remote="aws",user="system:serviceaccount:semaphore-remote:semaphore-remote-gcp"} 1` + "\n"
	}
	return text
}

// Where the service mirror serves the Multi-Cluster Services API, Collect reads the local
// ServiceExports with their conditions, and the ServiceImports the service mirror holds (not
// another's) with their IPs and the endpoints of the slices it imported for them by source
// cluster: here app/api exported by aws and gcp, whose ports differ, a ClusterSetIP import;
// app/db a headless one of aws; app/gone exported with no Service.
func TestCollectReadsTheServiceExportsAndImports(t *testing.T) {
	gcp := testenv.Start(t, testenv.Options{CRDDirs: []string{clustertest.CalicoCRDs()}}, "gcp")[0]
	clustertest.TokenSecret(t, gcp, "aws", "not-a-token")
	clustertest.UmbrellaMCS(t, gcp, "gcp", "aws", "https://127.0.0.1:1")
	ctx := context.Background()
	if err := gcp.EnsureNamespace(ctx, "app"); err != nil {
		t.Fatal(err)
	}

	created := time.Now()
	api := func(port int32) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}}}}
	}
	merged, _ := mcs.Merge([]mcs.Export{
		{Cluster: "aws", Created: created, Service: api(8080)},
		{Cluster: "gcp", Created: created.Add(time.Minute), Service: api(8081)},
	})
	slice := func(name string, ready ...bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: discoveryv1.AddressTypeIPv4}
		for i, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.1.0." + strconv.Itoa(i+1)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(r)}})
		}
		return s
	}
	imported := clustertest.MultiClusterService(t, gcp, mcs.Key{Namespace: "app", Name: "api"}, merged,
		map[string][]*discoveryv1.EndpointSlice{"aws": {slice("api-aws", true, false)}, "gcp": {slice("api-gcp", true)}})
	headless := api(5432)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	db, _ := mcs.Merge([]mcs.Export{{Cluster: "aws", Created: created, Service: headless}})
	clustertest.MultiClusterService(t, gcp, mcs.Key{Namespace: "app", Name: "db"}, db,
		map[string][]*discoveryv1.EndpointSlice{"aws": {slice("db-aws", true)}})
	clustertest.Create(t, gcp,
		clustertest.ServiceExport("app", "api", api(8081), &merged),
		clustertest.ServiceExport("app", "gone", nil, nil),
		// Another implementation's import, which status does not show as the service mirror's.
		&mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "app"},
			Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, Ports: []mcsv1beta1.ServicePort{{Port: 80}}}})

	st, err := mesh.Collect(ctx, mesh.Sources{Client: gcp.Client, Dynamic: dynamic.NewForConfigOrDie(gcp.Config), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(imported.Spec.IPs) == 0 {
		t.Fatalf("the import of app/api has no IPs: %+v", imported.Spec)
	}
	conflict := "the exporting clusters define the Service differently; the oldest export (aws) wins each conflicting property, ports are merged by name"
	want := &mesh.MultiCluster{
		Exports: []mesh.ServiceExport{
			{Name: "app/api", Valid: mesh.Condition{Status: "True", Reason: "Valid", Message: "the Service is exported"},
				Ready:    mesh.Condition{Status: "True", Reason: "Exported", Message: "the ServiceImport holds this cluster's endpoints"},
				Conflict: mesh.Condition{Status: "True", Reason: "PortConflict", Message: conflict}},
			{Name: "app/gone", Valid: mesh.Condition{Status: "False", Reason: "NoService", Message: "no Service of this name in the namespace"},
				Ready:    mesh.Condition{Status: "False", Reason: "Failed", Message: "the ServiceExport is not valid"},
				Conflict: mesh.Condition{Status: "False", Reason: "NoConflicts", Message: "an export that is not valid takes no part in the ServiceImport"}},
		},
		Imports: []mesh.ServiceImport{
			{Name: "app/api", Type: "ClusterSetIP", IPs: imported.Spec.IPs, Endpoints: 3, Ready: 2, Clusters: map[string]int{"aws": 2, "gcp": 1}},
			{Name: "app/db", Type: "Headless", Endpoints: 1, Ready: 1, Clusters: map[string]int{"aws": 1}},
		},
	}
	if diff := cmp.Diff(want, st.MultiCluster); diff != "" {
		t.Errorf("multi-cluster services (-want +got):\n%s", diff)
	}
	if len(st.Problems) != 0 {
		t.Errorf("problems: %q", st.Problems)
	}
}
