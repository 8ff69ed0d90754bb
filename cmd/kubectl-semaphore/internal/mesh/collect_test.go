package mesh_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/testenv"
)

// Collect reads what the controllers would have made in gcp, a consumer of aws: made here by
// hand as the controllers make it (a mirror with one unready endpoint, a global service with
// endpoints from both clusters, a network set), the peers of a running wireguard pod from its
// metrics, a pending one as a problem; and aws reachable with each component's credentials
// until it is cut off.
func TestCollect(t *testing.T) {
	cs := testenv.Start(t, testenv.Options{CRDDirs: []string{clustertest.CalicoCRDs()}}, "aws", "gcp")
	aws, gcp := cs[0], cs[1]
	ctx := context.Background()

	// Through aws's proxy, so that the test can cut it off.
	proxied, err := clientcmd.BuildConfigFromFlags("", aws.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	clustertest.Link(t, aws, gcp, "aws", "gcp", proxied.Host)

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
	// Two wireguard pods as the DaemonSet would make them (no kubelet runs them): one running,
	// with metrics, one pending.
	components, err := release.Find(ctx, gcp.Client, "")
	if err != nil {
		t.Fatal(err)
	}
	var wg release.Component
	for _, c := range components {
		if c.Name == release.WireGuard {
			wg = c
		}
	}
	for node, phase := range map[string]corev1.PodPhase{"gcp-1": corev1.PodRunning, "gcp-2": corev1.PodPending} {
		pod := clustertest.ComponentPod(t, gcp, wg, "wireguard-"+node, node)
		pod.Status.Phase = phase
		clustertest.UpdatePodStatus(t, gcp, pod)
	}
	metrics := staticMetrics{"wireguard-gcp-1": `# TYPE semaphore_wg_peer_last_handshake_timestamp_seconds gauge
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-1",remote="aws"} 1.7959824e+09
semaphore_wg_peer_last_handshake_timestamp_seconds{peer="aws-2",remote="aws"} 0
`}

	sources := mesh.Sources{Client: gcp.Client, Dynamic: dynamic.NewForConfigOrDie(gcp.Config), Metrics: metrics, ProbeTimeout: 2 * time.Second}
	st, err := mesh.Collect(ctx, sources)
	if err != nil {
		t.Fatal(err)
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
				{Component: "policy", Reachable: true, User: user},
				{Component: "service-mirror", Reachable: true, User: user},
				{Component: "wireguard", Reachable: true, User: user},
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
	if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(mesh.ClusterState{}, "Components")); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if len(st.Components) != 3 {
		t.Errorf("components %v, want the three controllers", st.Components)
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
		if a.Reachable || !strings.Contains(a.Error, proxied.Host) {
			t.Errorf("aws cut off, %s: reachable %v, error %q (want one naming %s)", a.Component, a.Reachable, a.Error, proxied.Host)
		}
	}

	// Without the controllers, Collect says where it looked.
	if _, err := mesh.Collect(ctx, mesh.Sources{Client: aws.Client, Namespace: "semaphore-remote"}); err == nil || !strings.Contains(err.Error(), "namespace semaphore-remote") {
		t.Errorf("no controllers: error %v", err)
	}
}
