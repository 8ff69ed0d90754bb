package charts_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	policyapp "github.com/kube-semaphore/semaphore/components/policy/app"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	mirrorapp "github.com/kube-semaphore/semaphore/components/service-mirror/app"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/service-mirror/mirror"
	wgapp "github.com/kube-semaphore/semaphore/components/wireguard/app"
	wgcontroller "github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device/devicetest"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers/peerstest"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
	"github.com/kube-semaphore/semaphore/internal/remote"
	"github.com/kube-semaphore/semaphore/internal/tooling/helmchart"
)

// Names of the least-privilege setup: semaphore-remote in aws for consumer gcp, the umbrella in
// gcp reading aws, its mirrors in a namespace of their own.
const (
	remoteRelease   = "semaphore-remote"
	remoteNamespace = "semaphore-remote"
	localRelease    = "semaphore"
	localNamespace  = "semaphore-system"
	mirrorNamespace = "semaphore-mirrors"
	tokenSecret     = "semaphore-remote-aws"
	localNode       = "gcp-node-1"
)

// Each controller's integration scenario passes when it runs with exactly the identities the
// charts create, and those identities can do nothing more: the remote token only reads what
// the components read, and no local identity reads Secrets or writes outside its own objects.
//
// The local identity is the component's ServiceAccount, by impersonation (the admin's
// kubeconfig with `as: system:serviceaccount:<namespace>:<name>`). The remote identity is the
// consumer's ServiceAccount in aws, through the kubeconfig Secret the umbrella renders and the
// token Secret it projects next to it, materialized as the kubelet would mount them. The
// configuration of each controller is its container's environment as rendered, decoded like
// the binary decodes it; only the paths a pod would have differently are pointed at files here.
func TestLeastPrivilege(t *testing.T) {
	sc := newPrivilegeScene(t)
	t.Run("service-mirror", func(t *testing.T) { mirrorScenario(t, sc.aws, sc.gcp, sc.pods["service-mirror"]) })
	t.Run("policy", func(t *testing.T) { policyScenario(t, sc.aws, sc.gcp, sc.pods["policy"], calico.APICRD, "sys-log") })
	t.Run("wireguard", func(t *testing.T) { wireguardScenario(t, sc.aws, sc.gcp, sc.pods["wireguard"]) })
	t.Run("remote token is read-only", sc.remoteTokenIsReadOnly)
	t.Run("local identities", sc.localIdentitiesWriteOnlyTheirOwn)
	t.Run("service-mirror reads for global services", sc.mirrorReadsForGlobalServices)
	t.Run("policy with projectcalico.org/v3 after an upgrade", sc.policyOnV3AfterAnUpgrade)
	t.Run("service-mirror without global services after an upgrade", sc.mirrorWithoutGlobalServicesAfterAnUpgrade)
}

// privilegeScene is what TestLeastPrivilege's steps share: semaphore-remote installed in aws
// for consumer gcp, the umbrella in gcp reading aws with every component on, and a pod of each
// component simulated from what the umbrella rendered.
type privilegeScene struct {
	aws, gcp *testenv.Cluster
	// consumerSA is gcp's ServiceAccount in aws, whose token the umbrella's remote uses.
	consumerSA string
	// localValues are the umbrella's values in gcp, which the upgrade steps add to.
	localValues string
	// pods are the simulated pods, by component.
	pods map[string]*simulatedPod
}

// newPrivilegeScene installs both charts and simulates the pods; each run of the test does it
// once, so that any one step (go test -run 'TestLeastPrivilege/local identities') runs alone.
func newPrivilegeScene(t *testing.T) *privilegeScene {
	t.Helper()
	aws, gcp := clusters(t)
	ctx := context.Background()

	rm := install(t, aws, remoteChart, remoteRelease, remoteNamespace, valuesOf(t, nil, fmt.Sprintf(`
clusterName: aws
apiServer: %s
consumers:
  - name: gcp
`, aws.Config.Host)))
	sas := rm.Of("ServiceAccount")
	if len(sas) != 1 {
		t.Fatalf("semaphore-remote with one consumer renders %d ServiceAccounts", len(sas))
	}
	consumerSA := sas[0].GetName()
	// No kube-controller-manager runs with the test API servers, so nothing fills the chart's
	// kubernetes.io/service-account-token Secret. The TokenRequest API issues a token for the
	// same ServiceAccount: what is tested is that identity's rights, not how its token travels.
	tr, err := aws.Client.CoreV1().ServiceAccounts(remoteNamespace).CreateToken(ctx, consumerSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The consuming side, as semaphore-remote's NOTES.txt tells: the token in a Secret of the
	// release namespace, the remote in global.remotes.
	if err := gcp.EnsureNamespace(ctx, localNamespace); err != nil {
		t.Fatal(err)
	}
	if _, err := gcp.Client.CoreV1().Secrets(localNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tokenSecret},
		Data:       map[string][]byte{"token": []byte(tr.Status.Token)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	localValues := fmt.Sprintf(`
global:
  clusterName: gcp
  remotes:
    - name: aws
      server: %s
      caData: %s
      allowAnyPodAddress: true # the test's pods have the addresses its nodes give them
      tokenSecret:
        name: %s
        key: token
serviceMirror:
  enabled: true
  mirrorNamespace:
    name: %s
policy:
  enabled: true
  calicoAPI: crd.projectcalico.org/v1
wireguard:
  enabled: true
  listenPorts:
    aws: 51821
`, aws.Config.Host, base64.StdEncoding.EncodeToString(aws.Config.CAData), tokenSecret, mirrorNamespace)
	um := install(t, gcp, umbrellaChart, localRelease, localNamespace, valuesOf(t, nil, localValues))

	pods := map[string]*simulatedPod{}
	for _, w := range workloadsOf(t, um) {
		pods[w.Component] = simulatePod(t, gcp, um, w)
	}
	for _, c := range components {
		if pods[c] == nil {
			t.Fatalf("the umbrella with every component enabled renders no workload for %s", c)
		}
	}

	return &privilegeScene{aws: aws, gcp: gcp, consumerSA: consumerSA, localValues: localValues, pods: pods}
}

// remoteTokenIsReadOnly: with the token semaphore-remote made for gcp, each component reads aws
// and can do nothing else: neither write, nor read Secrets or ConfigMaps.
func (sc *privilegeScene) remoteTokenIsReadOnly(t *testing.T) {
	ctx := context.Background()
	user := serviceAccountUser(remoteNamespace, sc.consumerSA)
	for _, comp := range components {
		remotes, err := remote.LoadRemotes(sc.pods[comp].RemotesDir, []string{"aws"}, remote.ClientOptions{UserAgent: "least-privilege", QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		client := remotes[0].Client
		who, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if who.Status.UserInfo.Username != user {
			t.Fatalf("%s's credentials for aws are %q's, want %q", comp, who.Status.UserInfo.Username, user)
		}
		if _, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("the token cannot even list nodes: %v", err)
		}
		refused(t, "create a Service in aws", func() error {
			_, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "intruder"},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
			}, metav1.CreateOptions{})
			return err
		})
		refused(t, "patch a Node of aws", func() error {
			_, err := client.CoreV1().Nodes().Patch(ctx, "aws-node-1", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"intruder":"yes"}}}`), metav1.PatchOptions{})
			return err
		})
		refused(t, "delete a Service of aws", func() error {
			return client.CoreV1().Services("sys-log").Delete(ctx, "fluentd", metav1.DeleteOptions{})
		})
		refused(t, "delete a Pod of aws", func() error {
			return client.CoreV1().Pods("sys-log").Delete(ctx, "forwarder-1", metav1.DeleteOptions{})
		})
		refused(t, "get its own token Secret", func() error {
			_, err := client.CoreV1().Secrets(remoteNamespace).Get(ctx, sc.consumerSA+"-token", metav1.GetOptions{})
			return err
		})
		refused(t, "list Secrets in every namespace", func() error {
			_, err := client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		})
		refused(t, "list ConfigMaps", func() error {
			_, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			return err
		})
	}
	// Everything else, asked of the API server's authorizer.
	reads := []resourceRef{{"", "nodes"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"", "pods"}}
	for _, ns := range []string{"", "default", "kube-system", remoteNamespace} {
		for _, r := range sweepResources {
			for _, verb := range allVerbs {
				want := slices.Contains(reads, r) && slices.Contains([]string{"get", "list", "watch"}, verb)
				checkAccess(t, sc.aws, user, ns, verb, r, want)
			}
		}
	}

}

// localIdentitiesWriteOnlyTheirOwn: no component's ServiceAccount in gcp reads a Secret, the
// remote token's least of all, or writes anything but its own objects.
func (sc *privilegeScene) localIdentitiesWriteOnlyTheirOwn(t *testing.T) {
	ctx := context.Background()
	for _, comp := range components {
		p := sc.pods[comp]
		user := serviceAccountUser(localNamespace, p.ServiceAccount)
		local := kubernetes.NewForConfigOrDie(p.LocalConfig(t))
		refused(t, comp+": list Secrets in every namespace", func() error {
			_, err := local.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		})
		for _, ns := range []string{localNamespace, mirrorNamespace, "default", "kube-system"} {
			refused(t, comp+": list Secrets in "+ns, func() error {
				_, err := local.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
				return err
			})
		}
		refused(t, comp+": get the remote token", func() error {
			_, err := local.CoreV1().Secrets(localNamespace).Get(ctx, tokenSecret, metav1.GetOptions{})
			return err
		})
		for _, ns := range []string{"default", localNamespace} {
			refused(t, comp+": create a Service in "+ns, func() error {
				_, err := local.CoreV1().Services(ns).Create(ctx, &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: "intruder"},
					Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
				}, metav1.CreateOptions{})
				return err
			})
		}
		// What each may write, and nothing else.
		for _, ns := range []string{"", "default", "kube-system", localNamespace, mirrorNamespace} {
			for _, r := range sweepResources {
				for _, verb := range allVerbs {
					checkAccess(t, sc.gcp, user, ns, verb, r, localAllowed(comp, p, ns, verb, r))
				}
			}
		}
	}

}

// mirrorReadsForGlobalServices: global services are on by default, so the service mirror reads
// this cluster's Services and EndpointSlices in every namespace and its Nodes, and still writes
// only in the mirror namespace (localIdentitiesWriteOnlyTheirOwn covers every verb).
func (sc *privilegeScene) mirrorReadsForGlobalServices(t *testing.T) {
	ctx := context.Background()
	p := sc.pods["service-mirror"]
	if sel := p.Env["SEMAPHORE_GLOBAL_LABEL_SELECTOR"]; sel != global.DefaultSelector {
		t.Fatalf("SEMAPHORE_GLOBAL_LABEL_SELECTOR=%q, want the default %q", sel, global.DefaultSelector)
	}
	local := kubernetes.NewForConfigOrDie(p.LocalConfig(t))
	if _, err := local.CoreV1().Services("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list Services in every namespace: %v", err)
	}
	if _, err := local.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list EndpointSlices in every namespace: %v", err)
	}
	if _, err := local.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list Nodes: %v", err)
	}
	refused(t, "update a Service in default", func() error {
		svc, err := local.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Labels = map[string]string{"intruder": "yes"}
		_, err = local.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
	refused(t, "create an EndpointSlice in default", func() error {
		_, err := local.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "intruder"},
			AddressType: discoveryv1.AddressTypeIPv4,
		}, metav1.CreateOptions{})
		return err
	})

}

// policyOnV3AfterAnUpgrade: with the default API group, projectcalico.org/v3, set through
// `helm upgrade`, the policy controller writes there, and may no longer write the other group.
func (sc *privilegeScene) policyOnV3AfterAnUpgrade(t *testing.T) {
	up := upgrade(t, sc.gcp, umbrellaChart, localRelease, localNamespace, valuesOf(t, nil, sc.localValues, "policy: {calicoAPI: projectcalico.org/v3}"))
	var p *simulatedPod
	for _, w := range workloadsOf(t, up) {
		if w.Component == "policy" {
			p = simulatePod(t, sc.gcp, up, w)
		}
	}
	if p == nil {
		t.Fatal("the upgraded release has no policy workload")
	}
	policyScenario(t, sc.aws, sc.gcp, p, calico.APIv3, "sys-log-v3")
	user := serviceAccountUser(localNamespace, p.ServiceAccount)
	for _, r := range []resourceRef{{"crd.projectcalico.org", "globalnetworksets"}, {"projectcalico.org", "globalnetworksets"}} {
		for _, verb := range allVerbs {
			checkAccess(t, sc.gcp, user, "", verb, r, localAllowed("policy", p, "", verb, r))
		}
	}

}

// mirrorWithoutGlobalServicesAfterAnUpgrade: with global services off through `helm upgrade`,
// the selector is empty, the global services' ClusterRole is gone, and with it every read
// outside the mirror namespace but the local ranges'.
func (sc *privilegeScene) mirrorWithoutGlobalServicesAfterAnUpgrade(t *testing.T) {
	up := upgrade(t, sc.gcp, umbrellaChart, localRelease, localNamespace, valuesOf(t, nil, sc.localValues, "serviceMirror: {globalServices: {enabled: false}}"))
	w, err := up.Workload("service-mirror")
	if err != nil {
		t.Fatal(err)
	}
	p := simulatePod(t, sc.gcp, up, w)
	if sel, ok := p.Env["SEMAPHORE_GLOBAL_LABEL_SELECTOR"]; !ok || sel != "" {
		t.Errorf("SEMAPHORE_GLOBAL_LABEL_SELECTOR=%q (set: %v), want set to the empty string", sel, ok)
	}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		for _, u := range up.Of(kind) {
			// Only the read of the local ranges (Nodes, ServiceCIDRs, IPAM blocks) stays.
			if u.GetLabels()["app.kubernetes.io/component"] == "service-mirror" && !strings.HasSuffix(u.GetName(), "-local-ranges") {
				t.Errorf("%s %s is still rendered", kind, u.GetName())
			}
		}
	}
	user := serviceAccountUser(localNamespace, p.ServiceAccount)
	// The authorizer sees RBAC through its own informers: wait for the binding's removal.
	testenv.Eventually(t, 20*time.Second, "the ClusterRoleBinding's removal to reach the authorizer", func() error {
		if allowed(t, sc.gcp, user, "", "list", resourceRef{"", "services"}) {
			return errors.New("still allowed to list Services in every namespace")
		}
		return nil
	})
	for _, ns := range []string{"", "default", "kube-system", localNamespace, mirrorNamespace} {
		for _, r := range sweepResources {
			for _, verb := range allVerbs {
				checkAccess(t, sc.gcp, user, ns, verb, r, localAllowed("service-mirror", p, ns, verb, r))
			}
		}
	}

}

// simulatedPod is what a pod of a workload would get: its configuration from the rendered
// environment, its remote credentials as the kubelet would mount them, and its identity.
type simulatedPod struct {
	Workload       workload
	Config         config.Validator
	Env            map[string]string
	RemotesDir     string
	ServiceAccount string
	Kubeconfig     string
}

// LocalConfig is the pod's client configuration of the local cluster.
func (p *simulatedPod) LocalConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := remote.LocalConfig(p.Kubeconfig, remote.ClientOptions{UserAgent: "least-privilege", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// simulatePod prepares what the kubelet would give a pod of w in c, and decodes the
// component's configuration from the rendered environment.
func simulatePod(t *testing.T, c *testenv.Cluster, m *manifest, w workload) *simulatedPod {
	t.Helper()
	ctr := mainContainer(t, w)
	dir := t.TempDir()
	volumes := map[string]corev1.Volume{}
	for _, v := range w.Pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range ctr.VolumeMounts {
		rel, ok := strings.CutPrefix(path.Clean(vm.MountPath), remotesDir+"/")
		if !ok {
			continue
		}
		if err := helmchart.WriteVolume(context.Background(), c.Client.CoreV1().Secrets(localNamespace), m, volumes[vm.Name], filepath.Join(dir, rel)); err != nil {
			t.Fatalf("%s %s: %v", w.Kind, w.Name, err)
		}
	}
	p := &simulatedPod{Workload: w, RemotesDir: dir, ServiceAccount: w.Pod.Spec.ServiceAccountName}
	p.Kubeconfig = impersonatingPod(t, c, serviceAccountUser(localNamespace, p.ServiceAccount), localNode)
	env := podEnv(t, w, ctr, localNamespace, w.Name+"-7d4b9c-x2x9z", localNode)
	if env["SEMAPHORE_REMOTES_DIR"] != remotesDir {
		t.Fatalf("%s %s: SEMAPHORE_REMOTES_DIR=%q, not where the remotes are mounted", w.Kind, w.Name, env["SEMAPHORE_REMOTES_DIR"])
	}
	if env["SEMAPHORE_LOCAL_KUBECONFIG"] != "" {
		t.Fatalf("%s %s: SEMAPHORE_LOCAL_KUBECONFIG is set; in a pod the in-cluster configuration is the ServiceAccount's", w.Kind, w.Name)
	}
	env["SEMAPHORE_REMOTES_DIR"] = dir
	env["SEMAPHORE_LOCAL_KUBECONFIG"] = p.Kubeconfig
	env["SEMAPHORE_ADMIN_ADDR"] = "127.0.0.1:0"
	cfg, err := loadConfig(t, w.Component, env)
	if err != nil {
		t.Fatalf("%s %s: the component does not start with its rendered environment: %v", w.Kind, w.Name, err)
	}
	p.Config = cfg
	p.Env = env
	return p
}

// run runs an app until the test ends.
func run(t *testing.T, what string, runFn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runFn(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testenv.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// mirrorScenario: a labelled aws Service with endpoints is mirrored, follows its endpoints, a
// name clash is reported as an Event, and losing the label removes the mirror; the election's
// Lease is held in the release namespace.
func mirrorScenario(t *testing.T, aws, gcp *testenv.Cluster, p *simulatedPod) {
	ctx := context.Background()
	cfg := *p.Config.(*mirrorapp.Config)
	if cfg.Namespace != mirrorNamespace {
		t.Fatalf("SEMAPHORE_MIRROR_NAMESPACE=%q, want the values' %q", cfg.Namespace, mirrorNamespace)
	}
	if cfg.LeaderElection.Namespace != localNamespace {
		t.Errorf("leader election in namespace %q, want the release namespace %q", cfg.LeaderElection.Namespace, localNamespace)
	}
	a, err := mirrorapp.New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	run(t, "service-mirror", a.Run)

	if err := aws.EnsureNamespace(ctx, "sys-log"); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd", Namespace: "sys-log", Labels: map[string]string{"mirror.semaphore.uw.io/mirror-service": "true"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "fluentd"}, Ports: []corev1.ServicePort{{Name: "forward", Port: 24224, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := aws.Client.CoreV1().Services("sys-log").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd-abc12", Namespace: "sys-log", Labels: map[string]string{
			discoveryv1.LabelServiceName: "fluentd", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{readyEndpoint("198.18.1.10")},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("forward"), Port: ptr.To[int32](24224), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	slice, err = aws.Client.DiscoveryV1().EndpointSlices("sys-log").Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := mirror.ServiceName(mirror.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"})
	expectMirror := func(addrs ...string) {
		t.Helper()
		testenv.Eventually(t, 20*time.Second, "mirror "+name+" with "+strings.Join(addrs, ","), func() error {
			if _, err := gcp.Client.CoreV1().Services(mirrorNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
			slices, err := gcp.Client.DiscoveryV1().EndpointSlices(mirrorNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
			if err != nil {
				return err
			}
			var got []string
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					got = append(got, e.Addresses...)
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(addrs, ",") {
				return fmt.Errorf("mirror endpoints %v", got)
			}
			return nil
		})
	}
	expectMirror("198.18.1.10")

	slice.Endpoints = append(slice.Endpoints, readyEndpoint("198.18.1.11"))
	if _, err := aws.Client.DiscoveryV1().EndpointSlices("sys-log").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectMirror("198.18.1.10", "198.18.1.11")

	// A Service of someone else's where a mirror would go: reported as an Event, not touched.
	clash := mirror.ServiceName(mirror.Source{Cluster: "aws", Namespace: "sys-log", Name: "clash"})
	if _, err := gcp.Client.CoreV1().Services(mirrorNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: clash},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clashing := svc.DeepCopy()
	clashing.Name = "clash"
	if _, err := aws.Client.CoreV1().Services("sys-log").Create(ctx, clashing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, gcp, mirrorNamespace, clash, "MirrorNameClash")

	svc, err = aws.Client.CoreV1().Services("sys-log").Get(ctx, "fluentd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(svc.Labels, "mirror.semaphore.uw.io/mirror-service")
	if _, err := aws.Client.CoreV1().Services("sys-log").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "mirror removed", func() error {
		_, err := gcp.Client.CoreV1().Services(mirrorNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("mirror still there")
	})
	expectLease(t, gcp, cfg.LeaderElection)
}

// policyScenario: labelled aws pods become a GlobalNetworkSet that follows them; a name clash is
// reported as an Event; the set goes with the pods.
func policyScenario(t *testing.T, aws, gcp *testenv.Cluster, p *simulatedPod, wantAPI, ns string) {
	ctx := context.Background()
	cfg := *p.Config.(*policyapp.Config)
	if cfg.CalicoAPI != wantAPI {
		t.Fatalf("SEMAPHORE_POLICY_CALICO_API=%q, want the values' %q", cfg.CalicoAPI, wantAPI)
	}
	a, err := policyapp.New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	run(t, "policy", a.Run)
	res, _ := calico.Resource(cfg.CalicoAPI)
	sets := dynamic.NewForConfigOrDie(gcp.Config).Resource(res)

	if err := aws.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	remotePod(t, aws, ns, "forwarder-1", "forwarders", "198.18.2.10")
	name := netset.SetName(netset.Source{Cluster: "aws", Namespace: ns, Name: "forwarders"})
	expectNets := func(nets ...string) {
		t.Helper()
		testenv.Eventually(t, 20*time.Second, "set "+name+" with "+strings.Join(nets, ","), func() error {
			u, err := sets.Get(ctx, name, metav1.GetOptions{})
			if len(nets) == 0 {
				if apierrors.IsNotFound(err) {
					return nil
				}
				if err != nil {
					return err
				}
				return errors.New("set still there")
			}
			if err != nil {
				return err
			}
			s, err := calico.FromUnstructured(u)
			if err != nil {
				return err
			}
			if strings.Join(s.Spec.Nets, ",") != strings.Join(nets, ",") {
				return fmt.Errorf("nets %v", s.Spec.Nets)
			}
			return nil
		})
	}
	expectNets("198.18.2.10/32")
	remotePod(t, aws, ns, "forwarder-2", "forwarders", "198.18.2.11")
	expectNets("198.18.2.10/32", "198.18.2.11/32")

	// Someone else's set where ours would go: reported as an Event (in "default", where
	// Events about cluster-scoped objects go), not touched.
	clash := netset.SetName(netset.Source{Cluster: "aws", Namespace: ns, Name: "clash"})
	u, err := calico.ToUnstructured(&calico.GlobalNetworkSet{
		ObjectMeta: metav1.ObjectMeta{Name: clash, Labels: map[string]string{"owner": "someone-else"}},
		Spec:       calico.GlobalNetworkSetSpec{Nets: []string{"192.0.2.0/24"}},
	}, cfg.CalicoAPI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sets.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remotePod(t, aws, ns, "clash-1", "clash", "198.18.2.20")
	expectEvent(t, gcp, metav1.NamespaceDefault, clash, "NetworkSetNameClash")

	for _, pod := range []string{"forwarder-1", "forwarder-2"} {
		if err := aws.Client.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	expectNets()
	expectLease(t, gcp, cfg.LeaderElection)
}

// wireguardScenario: with the DaemonSet's identity, the controller annotates its own node with
// its key and endpoint for aws, and configures a peer per annotated aws node.
func wireguardScenario(t *testing.T, aws, gcp *testenv.Cluster, p *simulatedPod) {
	ctx := context.Background()
	cfg := *p.Config.(*wgapp.Config)
	if cfg.NodeName != localNode {
		t.Fatalf("SEMAPHORE_WG_NODE_NAME=%q, want the pod's node %q", cfg.NodeName, localNode)
	}
	port, ok := cfg.ListenPorts["aws"]
	if !ok {
		t.Fatalf("SEMAPHORE_WG_LISTEN_PORTS has no port for aws: %v", cfg.ListenPorts)
	}
	peerstest.CreateNode(t, gcp.Client, localNode, "192.0.2.21", nil)
	remoteKey := devicetest.Key(t)
	peerstest.CreateNode(t, aws.Client, "aws-node-1", "192.0.2.11", peerstest.Annotations("gcp", remoteKey.PublicKey(), "192.0.2.11:51821"), "198.18.11.0/24")

	log := testLogger(t)
	opts := remote.ClientOptions{UserAgent: wgapp.Name, QPS: cfg.ClientQPS, Burst: cfg.ClientBurst}
	localCfg, err := remote.LocalConfig(cfg.LocalKubeconfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	remotes, err := remote.LoadRemotes(cfg.RemotesDir, cfg.Remotes, opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	in := daemon.NewInstruments(reg, wgapp.MetricsPrefix, time.Second, log)
	in.Health.AddClusters(remotes)
	key := devicetest.Key(t)
	devs := devicetest.New()
	device := peers.DeviceName("aws")
	ctrl, err := wgcontroller.New(wgcontroller.Options{
		LocalCluster: cfg.LocalCluster, NodeName: cfg.NodeName, EndpointAddressTypes: cfg.EndpointAddressTypes,
		MTU: cfg.MTU, Keepalive: cfg.Keepalive, ResyncPeriod: cfg.ResyncPeriod, PodCIDRsFrom: cfg.PodCIDRsFrom,
	}, kubernetes.NewForConfigOrDie(localCfg), remotes,
		[]wgcontroller.RemoteDevice{{Remote: "aws", Device: device, Key: key, ListenPort: port}},
		devs, in.Health, wgcontroller.NewMetrics(in.Factory, reg), in.Queue, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.Setup(ctx); err != nil {
		t.Fatalf("setting up with the DaemonSet's identity: %v", err)
	}
	run(t, "wireguard", func(ctx context.Context) error {
		go in.Health.Run(ctx)
		ctrl.Run(ctx, 1)
		return nil
	})

	n, err := gcp.Client.CoreV1().Nodes().Get(ctx, localNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Annotations[peers.PubKeyAnnotation("aws")]; got != key.PublicKey().String() {
		t.Errorf("node %s: pubKey annotation %q, want %q", localNode, got, key.PublicKey())
	}
	if got, want := n.Annotations[peers.EndpointAnnotation("aws")], fmt.Sprintf("192.0.2.21:%d", port); got != want {
		t.Errorf("node %s: endpoint annotation %q, want %q", localNode, got, want)
	}
	testenv.Eventually(t, 20*time.Second, "peer of aws-node-1", func() error {
		got := devs.Endpoints(device)
		if got[remoteKey.PublicKey().String()] != "192.0.2.11:51821" {
			return fmt.Errorf("peers %v", got)
		}
		return nil
	})
}

// readyEndpoint is a ready endpoint at addr.
func readyEndpoint(addr string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
}

// remotePod creates a running pod in namespace ns of c labelled for set, with address ip set
// through the status subresource as a kubelet would.
func remotePod(t *testing.T, c *testenv.Cluster, ns, name, set, ip string) {
	t.Helper()
	ctx := context.Background()
	p, err := c.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"policy.semaphore.uw.io/name": set}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "forwarder", Image: "forwarder:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if _, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectEvent waits for an Event with reason about object name in namespace.
func expectEvent(t *testing.T, c *testenv.Cluster, namespace, name, reason string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "event "+reason+" about "+name, func() error {
		events, err := c.Client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason && e.InvolvedObject.Name == name {
				return nil
			}
		}
		return fmt.Errorf("%d events in %s, none %s about %s", len(events.Items), namespace, reason, name)
	})
}

// expectLease checks that the election's Lease is held by this replica.
func expectLease(t *testing.T, c *testenv.Cluster, le config.LeaderElection) {
	t.Helper()
	holder, err := c.LeaseHolder(le.Namespace, le.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if holder != le.Identity {
		t.Errorf("Lease %s/%s is held by %q, want %q", le.Namespace, le.LeaseName, holder, le.Identity)
	}
}

// refused checks that the API server refuses an attempt as Forbidden.
func refused(t *testing.T, what string, attempt func() error) {
	t.Helper()
	if err := attempt(); !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

// resourceRef is a resource of an API group.
type resourceRef struct{ Group, Resource string }

// sweepResources are what the access sweeps ask about: what the components touch, and what
// nobody of ours should.
var sweepResources = []resourceRef{
	{"", "nodes"}, {"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"", "pods"},
	{"", "secrets"}, {"", "configmaps"}, {"", "serviceaccounts"}, {"", "namespaces"}, {"", "events"},
	{"coordination.k8s.io", "leases"}, {"apps", "deployments"}, {"apps", "daemonsets"},
	{"rbac.authorization.k8s.io", "roles"}, {"rbac.authorization.k8s.io", "clusterrolebindings"},
	{"crd.projectcalico.org", "globalnetworksets"}, {"projectcalico.org", "globalnetworksets"},
	{"networking.k8s.io", "servicecidrs"}, {"crd.projectcalico.org", "ipamblocks"},
}

// localRangeSources are what every component reads the local cluster's own ranges from, which
// no remote address may fall in: list and watch only.
var localRangeSources = []resourceRef{{"", "nodes"}, {"networking.k8s.io", "servicecidrs"}, {"crd.projectcalico.org", "ipamblocks"}}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// localAllowed is what component's ServiceAccount may do in namespace ns ("" for all
// namespaces or cluster-scoped): exactly what the controller needs.
func localAllowed(comp string, p *simulatedPod, ns, verb string, r resourceRef) bool {
	in := func(verbs ...string) bool { return slices.Contains(verbs, verb) }
	if slices.Contains(localRangeSources, r) && in("list", "watch") {
		return true
	}
	switch comp {
	case "service-mirror":
		cfg := p.Config.(*mirrorapp.Config)
		// Global services are on unless their selector is set to "".
		selector, set := p.Env["SEMAPHORE_GLOBAL_LABEL_SELECTOR"]
		globalOn := !set || selector != ""
		switch {
		case ns == cfg.Namespace && (r == resourceRef{"", "services"} || r == resourceRef{"discovery.k8s.io", "endpointslices"}):
			return in("get", "list", "watch", "create", "update", "delete")
		case globalOn && (r == resourceRef{"", "services"} || r == resourceRef{"discovery.k8s.io", "endpointslices"}):
			return in("get", "list", "watch") // the local cluster's own global Services, in any namespace
		case ns == cfg.Namespace && r == resourceRef{"", "events"}:
			return in("create", "patch")
		case ns == cfg.LeaderElection.Namespace && r == resourceRef{"coordination.k8s.io", "leases"}:
			return in("create") // get and update only on its own Lease, by name
		}
	case "policy":
		cfg := p.Config.(*policyapp.Config)
		res, _ := calico.Resource(cfg.CalicoAPI)
		switch {
		case r == resourceRef{res.Group, res.Resource}:
			return in("get", "list", "watch", "create", "update", "delete")
		case ns == metav1.NamespaceDefault && r == resourceRef{"", "events"}:
			return in("create", "patch")
		case ns == cfg.LeaderElection.Namespace && r == resourceRef{"coordination.k8s.io", "leases"}:
			return in("create")
		}
	case "wireguard":
		if r == (resourceRef{"", "nodes"}) {
			return in("get", "patch")
		}
	}
	return false
}

// checkAccess asks c's authorizer whether user (a ServiceAccount) may verb r in ns.
func checkAccess(t *testing.T, c *testenv.Cluster, user, ns, verb string, r resourceRef, want bool) {
	t.Helper()
	if got := allowed(t, c, user, ns, verb, r); got != want {
		where := "in every namespace"
		if ns != "" {
			where = "in " + ns
		}
		t.Errorf("%s %s %s %s: allowed=%v, want %v", user, verb, strings.TrimPrefix(r.Group+"/"+r.Resource, "/"), where, got, want)
	}
}

// allowed is c's authorizer's answer whether user (a ServiceAccount) may verb r in ns.
func allowed(t *testing.T, c *testenv.Cluster, user, ns, verb string, r resourceRef) bool {
	t.Helper()
	parts := strings.Split(user, ":")
	sar, err := authzClient(t, c).AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: r.Group, Resource: r.Resource,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

var authzClients sync.Map // *testenv.Cluster -> kubernetes.Interface

// authzClient is an admin client of c without client-go's default rate limit (5 requests per
// second), which would make the access sweeps take minutes.
func authzClient(t *testing.T, c *testenv.Cluster) kubernetes.Interface {
	t.Helper()
	if cl, ok := authzClients.Load(c); ok {
		return cl.(kubernetes.Interface)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS = -1
	cl := kubernetes.NewForConfigOrDie(cfg)
	authzClients.Store(c, cl)
	return cl
}
