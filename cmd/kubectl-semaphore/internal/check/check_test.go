package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/check"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/cli"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/clustertest"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// One spec each: goimports sees only the first name of a spec in a sibling file.
var (
	aws *testenv.Cluster
	gcp *testenv.Cluster
)

func TestMain(m *testing.M) {
	// gcp runs Calico: its GlobalNetworkSets and IP pools.
	ipPools := filepath.Join(testbed.RepoRoot(), "cmd", "kubectl-semaphore", "internal", "link", "testdata", "crds")
	clustertest.Main(m,
		clustertest.Server{Into: &aws, Name: "aws"},
		clustertest.Server{Into: &gcp, Name: "gcp", Options: testenv.Options{CRDDirs: []string{clustertest.CalicoCRDs(), ipPools}}})
}

// simulateRollout does what the controllers and kubelets of a real cluster would: the
// workloads' status says they rolled out, and each has a ready pod.
func simulateRollout(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	ctx := context.Background()
	components, err := release.Find(ctx, c.Client, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range components {
		switch comp.Kind {
		case "Deployment":
			d, err := c.Client.AppsV1().Deployments(comp.Namespace).Get(ctx, comp.Workload, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rolledOut(t, c, d)
		case "DaemonSet":
			d, err := c.Client.AppsV1().DaemonSets(comp.Namespace).Get(ctx, comp.Workload, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d.Status = appsv1.DaemonSetStatus{ObservedGeneration: d.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1}
			if _, err := c.Client.AppsV1().DaemonSets(comp.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ready(t, c, clustertest.ComponentPod(t, c, comp, comp.Workload+"-0", "gcp-node-1"), "10.2.0.10")
	}
}

// rolledOut marks the Deployment rolled out, as its controller would.
func rolledOut(t *testing.T, c *testenv.Cluster, d *appsv1.Deployment) {
	t.Helper()
	n := ptr.Deref(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	if _, err := c.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setEnv sets the variable name of the Deployment's first container to value (removes it when
// value is empty), and marks the Deployment rolled out again, as its controller would.
func setEnv(t *testing.T, c *testenv.Cluster, deployment, name, value string) {
	t.Helper()
	ctx := context.Background()
	deployments := c.Client.AppsV1().Deployments("semaphore")
	d, err := deployments.Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctr := &d.Spec.Template.Spec.Containers[0]
	ctr.Env = slices.DeleteFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if value != "" {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name, Value: value})
	}
	if d, err = deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rolledOut(t, c, d)
}

// ready makes the pod running and ready with address ip, as its kubelet would.
func ready(t *testing.T, c *testenv.Cluster, pod *corev1.Pod, ip string) {
	t.Helper()
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      ip,
		PodIPs:     []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	clustertest.UpdatePodStatus(t, c, pod)
}

// failures are the failed results, one line each, for messages.
func failures(results []check.Result) string {
	var b strings.Builder
	for _, r := range results {
		if !r.OK {
			fmt.Fprintf(&b, "\n  %s %s/%s: %s", r.Check, r.Remote, r.Component, r.Message)
		}
	}
	return b.String()
}

// failsNaming reports whether a result of check name (of component, unless "") fails with a
// message that holds text.
func failsNaming(results []check.Result, name, component, text string) bool {
	return slices.ContainsFunc(results, func(r check.Result) bool {
		return r.Check == name && (component == "" || r.Component == component) && !r.OK && strings.Contains(r.Message, text)
	})
}

// inSync is gcp linked to aws, with what gcp's controllers would have made of aws's objects, and
// how TestCheck checks it.
type inSync struct {
	// client and dyn are gcp's, client not slowed down by client-go's default rate limit.
	client kubernetes.Interface
	dyn    dynamic.Interface
	opts   check.Options
	// pods is what the components' pods say in their metrics (opts.Metrics serves it).
	pods fleet
	// mirror, set and globalSlice are what the controllers made in gcp: a mirror Service, a
	// GlobalNetworkSet and the copy of a global service's EndpointSlice.
	mirror      *corev1.Service
	set         *calico.GlobalNetworkSet
	globalSlice *discoveryv1.EndpointSlice
}

// linkInSync links gcp to aws, and makes in aws a mirrored Service, a global service with one
// slice, a labelled pod and a node, and in gcp what the controllers make of them.
func linkInSync(t *testing.T) inSync {
	t.Helper()
	ctx := context.Background()
	clustertest.Link(t, aws, gcp, "aws", "gcp", aws.Config.Host)
	simulateRollout(t, gcp)
	if err := aws.EnsureNamespace(ctx, "sys-log"); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd", Namespace: "sys-log", Labels: map[string]string{"mirror.semaphore.uw.io/mirror-service": "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "fwd", Port: 24224, Protocol: corev1.ProtocolTCP}}},
	}
	clustertest.Create(t, aws, svc)
	m := clustertest.Mirror(t, gcp, "aws", svc)
	echo := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "sys-log", Labels: map[string]string{global.LabelGlobalService: "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}
	echoSlice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "echo-abcde", Namespace: "sys-log", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.6"}}},
	}
	clustertest.Create(t, aws, echo, echoSlice)
	key := global.Key{Namespace: "sys-log", Name: "echo"}
	copies := clustertest.GlobalService(t, gcp, key, "aws", echo, map[string][]*discoveryv1.EndpointSlice{"aws": {echoSlice}})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd-0", Namespace: "sys-log", Labels: map[string]string{"policy.semaphore.uw.io/name": "fluentd"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "fluentd", Image: "fluentd"}}},
	}
	clustertest.Create(t, aws, pod)
	ready(t, aws, pod, "10.1.0.5")
	set := clustertest.NetworkSet(netset.Source{Cluster: "aws", Namespace: "sys-log", Name: "fluentd"}, "10.1.0.5/32")
	clustertest.Create(t, gcp, set)
	clustertest.Create(t, aws, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aws-node-1"}})
	// aws's pods live in 10.1.0.0/16: gcp's Calico holds them in a pool, as docs/calico.md says.
	createIPPool(t, "semaphore-aws-ipv4", "10.1.0.0/16", nil)

	// Whole seconds, as the metrics have them: ages come out exact.
	now := time.Now().Truncate(time.Second)
	pods := newFleet(t, now)
	fast := rest.CopyConfig(gcp.Config)
	fast.QPS, fast.Burst = 100, 200
	return inSync{
		client: kubernetes.NewForConfigOrDie(fast),
		dyn:    dynamic.NewForConfigOrDie(gcp.Config),
		opts: check.Options{
			Timeout:      5 * time.Second,
			Now:          func() time.Time { return now },
			Metrics:      pods.metrics,
			ProbeRemotes: true,
		},
		pods:        pods,
		mirror:      m,
		set:         set,
		globalSlice: copies[0],
	}
}

// run checks gcp with opts.
func (s inSync) run(t *testing.T, opts check.Options) []check.Result {
	t.Helper()
	results, err := check.Run(context.Background(), s.client, s.dyn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// eventuallyFails waits up to timeout (saying it waits for what) until checking gcp fails three
// times, once for each component, as match says (the failures described as counted).
func (s inSync) eventuallyFails(t *testing.T, timeout time.Duration, what, counted string, match func(check.Result) bool) {
	t.Helper()
	testenv.Eventually(t, timeout, what, func() error {
		results, err := check.Run(context.Background(), s.client, s.dyn, s.opts)
		if err != nil {
			return err
		}
		n := 0
		for _, r := range results {
			if !r.OK && match(r) {
				n++
			}
		}
		if n != 3 || !check.Failed(results) {
			return fmt.Errorf("%d %s, want 3:%s", n, counted, failures(results))
		}
		return nil
	})
}

// expectFailureNaming checks gcp and fails t unless check name fails, for component (any when
// ""), with a message naming what.
func (s inSync) expectFailureNaming(t *testing.T, name, component, what string) {
	t.Helper()
	if results := s.run(t, s.opts); !failsNaming(results, name, component, what) {
		t.Fatalf("no %s failure naming %s:%s", name, what, failures(results))
	}
}

// result checks gcp and returns the result of check name.
func (s inSync) result(t *testing.T, name string) check.Result {
	t.Helper()
	results := s.run(t, s.opts)
	for _, r := range results {
		if r.Check == name {
			return r
		}
	}
	t.Fatalf("no %s result:%s", name, failures(results))
	return check.Result{}
}

// The check of a linked pair of clusters, probing the remote from here too: in sync, it passes;
// each step then breaks one thing (and puts it back) and expects the check to name it, the
// revoked token last. One step runs alone: go test -run 'TestCheck/mirror drifted'.
func TestCheck(t *testing.T) {
	testenv.SkipIfShort(t, "API servers")
	s := linkedPair(t)
	t.Run("in sync, every check passes once per cluster and remote", s.passesEveryCheck)
	t.Run("a remote without pod ranges is a printed warning", s.warnsWithoutPodRanges)
	t.Run("command", s.commandFailsOnTheMetricsAlone)
	t.Run("over-privileged", s.overPrivilegedFailsNamingTheRole)
	t.Run("narrowed to the namespace", s.narrowedToTheNamespace)
	t.Run("network set missing", s.networkSetMissing)
	t.Run("mirror drifted", s.mirrorDrifted)
	t.Run("global slice missing", s.globalSliceMissing)
	t.Run("pod not ready", s.podNotReady)
	t.Run("an address outside the pod ranges", s.addressOutsideThePodRanges)
	t.Run("a Service beyond the limit", s.serviceBeyondTheLimit)
	t.Run("serving the Multi-Cluster Services API", s.servingTheMCSAPI)
	t.Run("revoked", s.revokedFailsNamingTheRemote)
}

// consumerSA is the consumer's (gcp's) ServiceAccount in aws.
const consumerSA = "semaphore-remote-gcp"

// commandFailsOnTheMetricsAlone: the command, with the kubeconfig, cannot read the pods'
// metrics here (no kubelet behind the pod proxy), so it fails on those alone (reachable, and
// the agents' peers), says so in JSON and exits 1; --skip leaves them out.
func (s inSync) commandFailsOnTheMetricsAlone(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"check", "--kubeconfig", gcp.Kubeconfig, "-o", "json", "--remote-timeout", "5s"}, &out, &errOut)
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr %s", code, errOut.String())
	}
	var results []check.Result
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	for _, r := range results {
		if r.OK == (r.Check == check.Peers || r.Check == check.Reachable) {
			t.Errorf("%+v", r)
		}
		if r.Check == check.Peers && (r.Remote != "aws" || !strings.Contains(r.Runbook, "#check-peers")) {
			t.Errorf("%+v: want remote aws and the runbook", r)
		}
		if r.Check == check.Reachable && !strings.Contains(r.Message, "through the API server's pod proxy") {
			t.Errorf("%+v: want it to say the metrics could not be read", r)
		}
	}
	out.Reset()
	if code := cli.Main([]string{"check", "--kubeconfig", gcp.Kubeconfig, "--skip", "reachable,peers"}, &out, &errOut); code != 0 || strings.Contains(out.String(), "peers") {
		t.Errorf("--skip reachable,peers: exit status %d, want 0:\n%s%s", code, out.String(), errOut.String())
	}
}

// overPrivilegedFailsNamingTheRole: an extra ClusterRole bound to the consumer in aws fails the
// access reviews, naming the role and what it allows.
func (s inSync) overPrivilegedFailsNamingTheRole(t *testing.T) {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "too-much"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}},
	}
	if _, err := aws.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "too-much"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "too-much"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "semaphore-remote", Name: consumerSA}},
	}
	if _, err := aws.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = aws.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "too-much", metav1.DeleteOptions{}) }()
	s.eventuallyFails(t, 10*time.Second, "the access reviews name the extra ClusterRole", "probe-access failures naming it", func(r check.Result) bool {
		return r.Check == check.ProbeAccess && strings.Contains(r.Message, "list secrets") && strings.Contains(r.Message, `ClusterRole "too-much"`) && r.Runbook != ""
	})
}

// narrowedToTheNamespace: with -n (the release namespace), every component is still counted and
// the check passes.
func (s inSync) narrowedToTheNamespace(t *testing.T) {
	results := s.run(t, check.Options{Namespace: "semaphore", Timeout: 5 * time.Second, Now: s.opts.Now, Metrics: s.opts.Metrics, ProbeRemotes: true})
	if check.Failed(results) {
		t.Fatalf("with -n, every component is still counted; fails:%s", failures(results))
	}
}

// networkSetMissing: a GlobalNetworkSet deleted from gcp fails network-sets, naming it.
func (s inSync) networkSetMissing(t *testing.T) {
	ctx := context.Background()
	gvr, _ := calico.Resource(calico.APICRD)
	if err := s.dyn.Resource(gvr).Delete(ctx, s.set.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer clustertest.Create(t, gcp, s.set)
	s.expectFailureNaming(t, check.NetworkSets, "", s.set.Name)
}

// mirrorDrifted: a mirror Service whose ports were changed in gcp fails mirrors, naming it.
func (s inSync) mirrorDrifted(t *testing.T) {
	ctx := context.Background()
	name := s.mirror.Name
	m, err := gcp.Client.CoreV1().Services("semaphore").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := m.Spec.Ports
	m.Spec.Ports = []corev1.ServicePort{{Name: "fwd", Port: 24225, Protocol: corev1.ProtocolTCP}}
	if m, err = gcp.Client.CoreV1().Services("semaphore").Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Spec.Ports = before
		_, _ = gcp.Client.CoreV1().Services("semaphore").Update(ctx, m, metav1.UpdateOptions{})
	}()
	s.expectFailureNaming(t, check.Mirrors, "", name)
}

// globalSliceMissing: a global service's EndpointSlice copy deleted from gcp fails
// global-services, naming it.
func (s inSync) globalSliceMissing(t *testing.T) {
	ctx := context.Background()
	if err := gcp.Client.DiscoveryV1().EndpointSlices("semaphore").Delete(ctx, s.globalSlice.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer clustertest.Create(t, gcp, s.globalSlice)
	s.expectFailureNaming(t, check.Global, "", s.globalSlice.Name)
}

// podNotReady: a component's pod that is not ready fails pods, naming the pod and its
// condition's message.
func (s inSync) podNotReady(t *testing.T) {
	ctx := context.Background()
	pod, err := gcp.Client.CoreV1().Pods("semaphore").Get(ctx, "semaphore-policy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	pod.Status.Conditions[0].Message = "readiness probe failed"
	clustertest.UpdatePodStatus(t, gcp, pod)
	defer ready(t, gcp, pod, "10.2.0.10")
	s.expectFailureNaming(t, check.Pods, "policy", "semaphore-policy-0 (readiness probe failed)")
}

// addressOutsideThePodRanges: a labelled pod of aws with an address outside aws's pod ranges is
// refused by the policy controller (outside_remote_ranges), so once the policy has ranges the
// set without it is in sync; without ranges the address is accepted, and the set lacks it.
func (s inSync) addressOutsideThePodRanges(t *testing.T) {
	ctx := context.Background()
	outside := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd-1", Namespace: "sys-log", Labels: map[string]string{"policy.semaphore.uw.io/name": "fluentd"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "fluentd", Image: "fluentd"}}},
	}
	clustertest.Create(t, aws, outside)
	defer func() { _ = aws.Client.CoreV1().Pods("sys-log").Delete(ctx, outside.Name, metav1.DeleteOptions{}) }()
	ready(t, aws, outside, "198.51.100.7")
	if r := s.result(t, check.NetworkSets); r.OK || !strings.Contains(r.Message, "sets with other addresses") {
		t.Errorf("without pod ranges, 198.51.100.7 is aws's to publish: %+v, want the set to differ", r)
	}

	setEnv(t, gcp, "semaphore-policy", "SEMAPHORE_REMOTE_POD_RANGES", "aws:10.1.0.0/16")
	defer setEnv(t, gcp, "semaphore-policy", "SEMAPHORE_REMOTE_POD_RANGES", "")
	results := s.run(t, s.opts)
	if check.Failed(results) {
		t.Errorf("with aws's pod range 10.1.0.0/16, the set without 198.51.100.7 is in sync; fails:%s", failures(results))
	}
	for _, r := range results {
		if r.Check != check.PodRanges || r.Component == "" {
			continue
		}
		if got, want := r.Warning, r.Component != "policy"; got != want || !r.OK {
			t.Errorf("%+v: want a warning for the components without ranges only", r)
		}
		if r.Component == "policy" && !strings.Contains(r.Message, "must lie in 10.1.0.0/16") {
			t.Errorf("%+v: want the ranges named", r)
		}
	}
}

// serviceBeyondTheLimit: a selected remote Service beyond the service mirror's limit has no
// mirror, as asked: a warning that names it, not a failure.
func (s inSync) serviceBeyondTheLimit(t *testing.T) {
	ctx := context.Background()
	extra := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-extra", Namespace: "sys-log", Labels: map[string]string{"mirror.semaphore.uw.io/mirror-service": "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "fwd", Port: 24224, Protocol: corev1.ProtocolTCP}}},
	}
	clustertest.Create(t, aws, extra)
	defer func() { _ = aws.Client.CoreV1().Services("sys-log").Delete(ctx, extra.Name, metav1.DeleteOptions{}) }()
	if r := s.result(t, check.Mirrors); r.OK || !strings.Contains(r.Message, "sys-log/zz-extra") {
		t.Errorf("within the limit, zz-extra without a mirror: %+v, want a failure naming it", r)
	}
	setEnv(t, gcp, "semaphore-service-mirror", "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "1")
	defer setEnv(t, gcp, "semaphore-service-mirror", "SEMAPHORE_MIRROR_MAX_SERVICES_PER_REMOTE", "1000")
	if r := s.result(t, check.Mirrors); !r.OK || !r.Warning || !strings.Contains(r.Message, "sys-log/zz-extra") {
		t.Errorf("beyond a limit of 1, zz-extra without a mirror: %+v, want a warning naming it", r)
	}
}

// servingTheMCSAPI: serving the Multi-Cluster Services API, the service mirror also needs to
// read the remote's ServiceExports, which semaphore-remote grants.
func (s inSync) servingTheMCSAPI(t *testing.T) {
	setEnv(t, gcp, "semaphore-service-mirror", release.MCSEnabledEnv, "true")
	defer setEnv(t, gcp, "semaphore-service-mirror", release.MCSEnabledEnv, "false")
	r := resultOf(t, s.run(t, s.opts), check.ProbeAccess, "aws", release.ServiceMirror)
	if !r.OK || !strings.Contains(r.Message, "list serviceexports.multicluster.x-k8s.io, watch serviceexports.multicluster.x-k8s.io") {
		t.Errorf("%+v: want the service mirror allowed to read aws's ServiceExports", r)
	}
}

// revokedFailsNamingTheRemote: with the consumer's ServiceAccount deleted in aws (its token
// revoked), probing fails naming aws. It runs last: nothing restores the ServiceAccount.
func (s inSync) revokedFailsNamingTheRemote(t *testing.T) {
	ctx := context.Background()
	if err := aws.Client.CoreV1().ServiceAccounts("semaphore-remote").Delete(ctx, consumerSA, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.eventuallyFails(t, 20*time.Second, "the check fails naming aws", "probe-identity failures naming aws", func(r check.Result) bool {
		return r.Check == check.ProbeIdentity && r.Remote == "aws" && strings.Contains(r.Message, "remote aws")
	})
}

// passesEveryCheck: with everything in sync, every check passes, each once per cluster and
// remote (the preflight's and the Multi-Cluster Services API's once per cluster), and --skip
// knows them all.
func (s inSync) passesEveryCheck(t *testing.T) {
	results := s.run(t, s.opts)
	if check.Failed(results) {
		t.Fatalf("in sync, the check fails:%s", failures(results))
	}
	want := map[string]int{
		check.Pods: 3, check.PodRanges: 3 + 1, check.Reachable: 3, check.Identity: 3, check.Access: 3,
		check.Peers: 1, check.Handshakes: 1, check.WireGuardMode: 1, check.MTU: 1,
		check.DNS: 1, check.IPPools: 1, check.MCSAPI: 1, check.MCSExports: 1, check.MCSConflicts: 1,
		check.ProbeReachable: 3, check.ProbeIdentity: 3, check.ProbeAccess: 3, check.Mirrors: 1, check.Global: 1, check.NetworkSets: 1,
	}
	got := map[string]int{}
	for _, r := range results {
		got[r.Check]++
		// Each result is about remote aws, but the preflight's and the service mirror's
		// Multi-Cluster Services API's, about the cluster.
		if r.Check != check.Pods && (r.Cluster != "gcp" || r.Remote != "aws" && r.Component != "" && !strings.HasPrefix(r.Check, "mcs-")) {
			t.Errorf("result %+v: want cluster gcp, remote aws", r)
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d %s results, want %d (%v)", got[k], k, n, got)
		}
	}
	// --skip takes the name of every check there is.
	if unknown := check.Unknown(slices.Collect(maps.Keys(got))); unknown != nil {
		t.Errorf("checks %v are not in check.Names, which --skip takes", unknown)
	}
}

// warnsWithoutPodRanges: the umbrella gives aws no podRanges, so each component warns, and still
// passes; the warning is printed as one.
func (s inSync) warnsWithoutPodRanges(t *testing.T) {
	results := s.run(t, s.opts)
	for _, r := range results {
		if r.Check == check.PodRanges && r.Component != "" && (!r.OK || !r.Warning || !strings.Contains(r.Message, "remote aws has no pod ranges") ||
			!strings.Contains(r.Message, "held only to the special, local and width rules")) {
			t.Errorf("pod-ranges without podRanges: %+v, want a warning that aws is held to the rules alone", r)
		}
	}

	var text strings.Builder
	if err := check.Print(&text, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl semaphore check:\n%s", text.String())
	if !strings.Contains(text.String(), "WARN pod-ranges      gcp <- aws policy: remote aws has no pod ranges") {
		t.Errorf("the warning is not printed as one:\n%s", text.String())
	}
}
