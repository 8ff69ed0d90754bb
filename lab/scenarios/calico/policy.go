package calico

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	policycalico "github.com/kube-semaphore/semaphore/components/policy/calico"
	"github.com/kube-semaphore/semaphore/components/policy/netset"
	"github.com/kube-semaphore/semaphore/internal/ownership"
	"github.com/kube-semaphore/semaphore/lab/env"
	"github.com/kube-semaphore/semaphore/lab/layout"
	"github.com/kube-semaphore/semaphore/lab/podlog"
	"github.com/kube-semaphore/semaphore/lab/scenarios/observe"
)

// The Calico policy (lab check, after the traffic between providers): the NetworkPolicy of
// docs/policy.md, applied as the page writes it in aws through the Calico API server, and
// enforced by Felix on fluentd's pods. It admits gcp's forwarders, whose addresses
// semaphore-policy keeps in a GlobalNetworkSet in aws, and nothing else from outside on
// fluentd's port. The scenario shows that the forwarders' requests keep arriving; that a pod of
// their namespace without the policy label, sending the same way, times out; how soon a new
// forwarder is admitted, and that its address leaves the set once it is gone; and that
// semaphore-policy, moved to Calico's CRDs (crd.projectcalico.org/v1, where the Calico API
// server stores its objects), keeps the sets and the forwarders admitted, before it is moved
// back. The policy stays: the rest of the lab runs with it.
const (
	// policyDoc is the page whose NetworkPolicy the scenario applies, policyName its name.
	policyDoc  = "docs/policy.md"
	policyName = "allow-gcp-forwarder-to-fluentd"
	// policySettle is the time Felix is given to program the policy before the forwarders'
	// requests are counted.
	policySettle = 3 * time.Second
	// admitWindow is how long the forwarders' requests are counted, each time.
	admitWindow = 10 * time.Second
	// admitWithin bounds the time from a new forwarder's Running to its first request
	// admitted, and from a removed forwarder's end to its address leaving the set.
	admitWithin = 30 * time.Second
	// strangerName is the pod without the policy label; strangerFor is how long it sends, a
	// few of its attempts (each gives up after the sample's 5 s -timeout).
	strangerName = "stranger"
	strangerFor  = 20 * time.Second
	// calicoSettle bounds the waits for pods to run or go and for semaphore-policy to roll out.
	calicoSettle = 2 * time.Minute
	// deletionCost is the annotation by which a ReplicaSet scaled down picks the pods to remove,
	// the lowest cost first.
	deletionCost = "controller.kubernetes.io/pod-deletion-cost"
	// calicoAPIEnv is semaphore-policy's setting of the Calico API it writes to.
	calicoAPIEnv = "SEMAPHORE_POLICY_CALICO_API"
)

// networkPolicies are Calico's namespaced NetworkPolicies, as the Calico API server serves them.
var networkPolicies = schema.FromAPIVersionAndKind(policycalico.APIv3, "NetworkPolicy").GroupVersion().WithResource("networkpolicies")

// forwarderSource is what the forwarders' set in aws stands for.
var forwarderSource = netset.Source{Cluster: layout.ForwarderCluster, Namespace: layout.SampleNamespace, Name: layout.ForwarderName}

// calicoRun is one run of the scenario.
type calicoRun struct {
	l   *env.Lab
	rec *layout.Record
	// aws is a dynamic client of aws, where fluentd, the policy and the forwarders' set are.
	aws                 dynamic.Interface
	forwarders, fluentd []layout.Pod
	applied             time.Time
}

// CheckPolicy runs the scenario and returns the problems.
func CheckPolicy(ctx context.Context, l *env.Lab) []string {
	fmt.Fprintf(l.Out(), "Calico policy (%s's NetworkPolicy %s in %s, through %s; Felix enforces it on %s)\n",
		policyDoc, policyName, layout.FluentdCluster, policycalico.APIv3, layout.FluentdName)
	if !l.NodesRun() {
		fmt.Fprintf(l.Out(), "  skipped: %s\n", nodesSkipped(l.Record()))
		return nil
	}
	c, err := newCalicoRun(l)
	if err != nil {
		return []string{fmt.Sprintf("calico policy: %v", err)}
	}
	for _, phase := range []func(context.Context) []string{c.applyPolicy, c.admitForwarders, c.refuseStranger, c.scaleForwarders, c.bothAPIs} {
		if problems := phase(ctx); len(problems) > 0 {
			return problems
		}
	}
	return nil
}

// nodesSkipped says why the lab runs without nodes.
func nodesSkipped(rec *layout.Record) string {
	if rec.Nodes != nil && rec.Nodes.Skipped != "" {
		return rec.Nodes.Skipped
	}
	return "the lab runs without nodes"
}

// newCalicoRun starts a run on the pods the lab recorded.
func newCalicoRun(l *env.Lab) (*calicoRun, error) {
	rec := l.Record()
	c := &calicoRun{l: l, rec: rec, forwarders: rec.PodsOf(layout.ForwarderCluster, layout.ForwarderName), fluentd: rec.PodsOf(layout.FluentdCluster, layout.FluentdName)}
	if len(c.forwarders) == 0 || len(c.fluentd) == 0 {
		return nil, fmt.Errorf("%d %s pods in %s, %d %s pods in %s: none to check", len(c.forwarders), layout.ForwarderName, layout.ForwarderCluster, len(c.fluentd), layout.FluentdName, layout.FluentdCluster)
	}
	var err error
	c.aws, err = dynamic.NewForConfig(l.Cluster(layout.FluentdCluster).Config)
	return c, err
}

// docPolicy is the NetworkPolicy of policyDoc, as the page writes it.
func docPolicy() (*unstructured.Unstructured, error) {
	policy, err := env.DocObject(policyDoc, "NetworkPolicy", policyName)
	if err != nil {
		return nil, err
	}
	if policy.GetAPIVersion() != policycalico.APIv3 {
		return nil, fmt.Errorf("%s: NetworkPolicy %s is of %s, not %s", policyDoc, policyName, policy.GetAPIVersion(), policycalico.APIv3)
	}
	return policy, nil
}

// applyPolicy applies the page's policy in aws. Whether it fits the lab (selects fluentd,
// admits the forwarders' set on their port) shows in what Felix then lets through.
func (c *calicoRun) applyPolicy(ctx context.Context) []string {
	policy, err := docPolicy()
	if err != nil {
		return []string{err.Error()}
	}
	how, err := createOrUpdate(ctx, c.aws.Resource(networkPolicies).Namespace(policy.GetNamespace()), policy)
	if err != nil {
		return []string{fmt.Sprintf("%s: applying NetworkPolicy %s/%s: %v", layout.FluentdCluster, policy.GetNamespace(), policy.GetName(), err)}
	}
	c.applied = time.Now()
	fmt.Fprintf(c.l.Out(), "  %s NetworkPolicy %s/%s in %s (%s), as %s writes it\n", how, policy.GetNamespace(), policy.GetName(), layout.FluentdCluster, policycalico.APIv3, policyDoc)
	return nil
}

// createOrUpdate creates obj, or updates the object of its name (one an earlier run applied)
// to it, and says which. Not server-side apply: Calico API servers of some releases answer
// NotFound to an apply that would create a (tiered) policy.
func createOrUpdate(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured) (string, error) {
	if _, err := r.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		return "created", err
	}
	return "updated", retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := obj.DeepCopy()
		next.SetResourceVersion(current.GetResourceVersion())
		_, err = r.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
}

// admitForwarders checks that the forwarders' requests keep arriving once the policy is there.
func (c *calicoRun) admitForwarders(ctx context.Context) []string {
	return c.admitted(ctx, "after the policy", c.applied.Add(policySettle))
}

// admitted counts, in the admitWindow from from on, the requests of every forwarder that
// fluentd logged, and the forwarders' own attempts: every forwarder must have requests logged,
// and no attempt may fail.
func (c *calicoRun) admitted(ctx context.Context, when string, from time.Time) []string {
	to := from.Add(admitWindow)
	// The lines of the window's last requests are written a little after them.
	if err := observe.SleepUntil(ctx, to.Add(300*time.Millisecond)); err != nil {
		return []string{err.Error()}
	}
	var counts, problems []string
	for _, fw := range c.forwarders {
		n, err := c.logged(fw, from, to)
		if err != nil {
			return []string{fmt.Sprintf("reading fluentd's logs: %v", err)}
		}
		counts = append(counts, fmt.Sprintf("%s %d", fw.Name, n))
		if n == 0 {
			problems = append(problems, fmt.Sprintf("%s: fluentd logged no request of %s (%s) in %s", when, fw.Name, fw.IP, admitWindow))
		}
	}
	sent, err := observe.SenderStats(c.forwarders, from, to)
	if err != nil {
		return append(problems, fmt.Sprintf("reading the forwarders' logs: %v", err))
	}
	fmt.Fprintf(c.l.Out(), "  admitted %s: fluentd logged %s requests in %s; the forwarders sent %s\n", when, strings.Join(counts, ", "), admitWindow, sent)
	if sent.Failed > 0 {
		problems = append(problems, fmt.Sprintf("%s: %d of the forwarders' %d attempts failed", when, sent.Failed, sent.Sent))
	}
	return problems
}

// logged counts the requests of client that fluentd's pods logged in [from, to).
func (c *calicoRun) logged(client layout.Pod, from, to time.Time) (int, error) {
	counts, err := observe.Requests{Client: client, Servers: c.fluentd}.Served(from, to)
	return counts[layout.FluentdCluster], err
}

// forwarderSet reads the forwarders' GlobalNetworkSet in aws through api.
func (c *calicoRun) forwarderSet(ctx context.Context, api string) (*unstructured.Unstructured, error) {
	resource, err := policycalico.Resource(api)
	if err != nil {
		return nil, err
	}
	return c.aws.Resource(resource).Get(ctx, netset.SetName(forwarderSource), metav1.GetOptions{})
}

// refuseStranger runs a pod like the forwarders, on the node of one, but without the policy
// label, for strangerFor, and expects none of its requests to reach fluentd: each times out.
// The pod is deleted afterwards.
func (c *calicoRun) refuseStranger(ctx context.Context) []string {
	client := c.l.Cluster(layout.ForwarderCluster).Client
	d, err := client.AppsV1().Deployments(layout.SampleNamespace).Get(ctx, layout.ForwarderName, metav1.GetOptions{})
	if err != nil {
		return []string{fmt.Sprintf("%s: reading Deployment %s: %v", layout.ForwarderCluster, layout.ForwarderName, err)}
	}
	pods := client.CoreV1().Pods(layout.SampleNamespace)
	// One an earlier run left.
	if err := deletePod(ctx, pods, strangerName); err != nil {
		return []string{err.Error()}
	}
	if _, err := pods.Create(ctx, strangerPod(&d.Spec.Template, c.forwarders[0].Node), metav1.CreateOptions{}); err != nil {
		return []string{fmt.Sprintf("%s: creating pod %s: %v", layout.ForwarderCluster, strangerName, err)}
	}
	defer func() {
		if err := deletePod(context.WithoutCancel(ctx), pods, strangerName); err != nil {
			c.l.Logf("calico policy: %v", err)
		}
	}()
	pod, err := waitRunning(ctx, pods, strangerName)
	if err != nil {
		return []string{err.Error()}
	}
	if err := observe.SleepUntil(ctx, time.Now().Add(strangerFor)); err != nil {
		return []string{err.Error()}
	}
	return c.strangerRefused(c.rec.PodOf(layout.ForwarderCluster, pod), pod.CreationTimestamp.Time, time.Now())
}

// strangerPod is a pod of the forwarders' template, on node, with only the name label: it sends
// as they do, but is in no set.
func strangerPod(forwarders *corev1.PodTemplateSpec, node string) *corev1.Pod {
	spec := forwarders.Spec.DeepCopy()
	spec.TopologySpreadConstraints = nil
	spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: strangerName, Labels: map[string]string{"app.kubernetes.io/name": strangerName}},
		Spec:       *spec,
	}
}

// strangerRefused checks the stranger's requests in [from, to): fluentd logged none, and the
// stranger's own log has at least two attempts, all timed out.
func (c *calicoRun) strangerRefused(stranger layout.Pod, from, to time.Time) []string {
	served, err := c.logged(stranger, from, to)
	if err != nil {
		return []string{fmt.Sprintf("reading fluentd's logs: %v", err)}
	}
	attempts, err := observe.Requests{Client: stranger}.Attempts(from, to)
	if err != nil {
		return []string{fmt.Sprintf("reading %s's log: %v", strangerName, err)}
	}
	timedOut, example := timeouts(attempts)
	fmt.Fprintf(c.l.Out(), "  refused: %s (%s on %s, without %s): fluentd logged %d of its requests in %s; it logged %d attempts, %d timed out (%s)\n",
		stranger.Name, stranger.IP, stranger.Node, layout.PolicyLabel, served, to.Sub(from).Round(time.Second), len(attempts), timedOut, example)
	var problems []string
	if served > 0 {
		problems = append(problems, fmt.Sprintf("fluentd logged %d requests of %s (%s), which is in no set: the policy let it in", served, stranger.Name, stranger.IP))
	}
	if len(attempts) < 2 || timedOut < len(attempts) {
		problems = append(problems, fmt.Sprintf("%s (%s) logged %d attempts, %d timed out: want at least 2, all timed out", stranger.Name, stranger.IP, len(attempts), timedOut))
	}
	return problems
}

// timeouts counts the attempts that timed out (a connection dropped on the way gets no answer
// at all), and gives the error of the first one.
func timeouts(attempts []podlog.Record) (n int, example string) {
	for _, a := range attempts {
		if err := strings.ToLower(a.Err); a.Failed() && (strings.Contains(err, "timeout") || strings.Contains(err, "deadline exceeded")) {
			if n == 0 {
				example = a.Err
			}
			n++
		}
	}
	return n, example
}

// scaleForwarders adds a forwarder, times how soon fluentd logs its first request, and removes
// it again.
func (c *calicoRun) scaleForwarders(ctx context.Context) []string {
	client := c.l.Cluster(layout.ForwarderCluster).Client
	d, err := client.AppsV1().Deployments(layout.SampleNamespace).Get(ctx, layout.ForwarderName, metav1.GetOptions{})
	if err != nil {
		return []string{fmt.Sprintf("%s: reading Deployment %s: %v", layout.ForwarderCluster, layout.ForwarderName, err)}
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	if err := observe.ScaleDeployment(ctx, client, layout.SampleNamespace, layout.ForwarderName, replicas+1); err != nil {
		return []string{fmt.Sprintf("%s: scaling %s to %d: %v", layout.ForwarderCluster, layout.ForwarderName, replicas+1, err)}
	}
	var problems []string
	pod, err := observe.WaitNewPod(ctx, client.CoreV1().Pods(layout.SampleNamespace), layout.ForwarderName, c.forwarders, observe.PodReady)
	if err != nil {
		problems = []string{err.Error()}
	} else {
		problems = c.timeAdmission(ctx, pod)
	}
	return append(problems, c.removeForwarder(ctx, client, pod, replicas)...)
}

// readySince is when pod turned ready (to the second, as the API has it).
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return pod.CreationTimestamp.Time
}

// timeAdmission waits for fluentd to log the new forwarder's first request, within admitWithin
// of the pod's Running, and prints how long after it that was.
func (c *calicoRun) timeAdmission(ctx context.Context, pod *corev1.Pod) []string {
	p := c.rec.PodOf(layout.ForwarderCluster, pod)
	running, created := readySince(pod), pod.CreationTimestamp.Time
	deadline := running.Add(admitWithin)
	first, ok, err := observe.Requests{Client: p, Servers: c.fluentd}.FirstServed(ctx, created, max(time.Until(deadline), time.Second))
	if err != nil {
		return []string{fmt.Sprintf("reading fluentd's logs: %v", err)}
	}
	if !ok || first.After(deadline) {
		return []string{fmt.Sprintf("fluentd logged no request of the new forwarder %s (%s on %s) within %s of its Running", p.Name, p.IP, p.Node, admitWithin)}
	}
	before, err := observe.SenderStats([]layout.Pod{p}, created, first)
	if err != nil {
		return []string{fmt.Sprintf("reading %s's log: %v", p.Name, err)}
	}
	fmt.Fprintf(c.l.Out(), "  scaled up: %s (%s on %s) Running at %s; fluentd logged its first request %s later, after %d of its attempts failed\n",
		p.Name, p.IP, p.Node, running.Format(time.TimeOnly), first.Sub(running).Round(10*time.Millisecond), before.Failed)
	return nil
}

// removeForwarder scales the forwarders back to replicas, making the ReplicaSet remove pod (the
// new one, nil when none came), and expects its address to leave the set in aws within
// admitWithin of its end, and the forwarders to be the recorded ones again.
func (c *calicoRun) removeForwarder(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, replicas int32) []string {
	gone, err := scaleBack(ctx, client, layout.ForwarderName, pod, replicas)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", layout.ForwarderCluster, err)}
	}
	if pod == nil {
		return nil
	}
	var problems []string
	if p := c.leftSet(ctx, pod, gone); p != "" {
		problems = append(problems, p)
	}
	return append(problems, c.sameForwarders(ctx, client.CoreV1().Pods(layout.SampleNamespace))...)
}

// leftSet waits for the address of pod, gone at gone, to leave the forwarders' set in aws.
func (c *calicoRun) leftSet(ctx context.Context, pod *corev1.Pod, gone time.Time) string {
	var left time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, admitWithin, true, func(ctx context.Context) (bool, error) {
		set, err := c.forwarderSet(ctx, layout.CalicoAPI)
		// An error (the Calico API server busy) is asked again.
		if err == nil && !setHolds(set, pod.Status.PodIP) {
			left = time.Now()
		}
		return !left.IsZero(), nil
	})
	if err != nil {
		return fmt.Sprintf("%s's set %s still holds %s (%s) %s after the pod was gone", layout.FluentdCluster, netset.SetName(forwarderSource), pod.Status.PodIP, pod.Name, admitWithin)
	}
	fmt.Fprintf(c.l.Out(), "  scaled back: %s (%s) gone, its address left %s's set %s after\n",
		pod.Name, pod.Status.PodIP, layout.FluentdCluster, left.Sub(gone).Round(10*time.Millisecond))
	return ""
}

// setHolds tells whether a GlobalNetworkSet holds the address ip, as a network of its own.
func setHolds(set *unstructured.Unstructured, ip string) bool {
	nets, _, _ := unstructured.NestedStringSlice(set.Object, "spec", "nets")
	return slices.Contains(nets, hostNet(ip))
}

// hostNet is the network of the one address ip, as semaphore-policy writes it in a set
// (198.18.1.7/32), "" when ip is no address.
func hostNet(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	return netip.PrefixFrom(addr, addr.BitLen()).String()
}

// sameForwarders checks that the forwarder pods are the recorded ones: the scale-down removed
// the new pod, none of those the status and the scenarios after this one know.
func (c *calicoRun) sameForwarders(ctx context.Context, pods typedcorev1.PodInterface) []string {
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + layout.ForwarderName})
	if err != nil {
		return []string{fmt.Sprintf("%s: listing the %s pods: %v", layout.ForwarderCluster, layout.ForwarderName, err)}
	}
	var now, recorded []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			now = append(now, p.Name)
		}
	}
	for _, p := range c.forwarders {
		recorded = append(recorded, p.Name)
	}
	slices.Sort(now)
	slices.Sort(recorded)
	if !slices.Equal(now, recorded) {
		return []string{fmt.Sprintf("%s: the %s pods are %v after the scale-down, not %v as recorded", layout.ForwarderCluster, layout.ForwarderName, now, recorded)}
	}
	return nil
}

// waitRunning waits for pod name to run, with an address.
func waitRunning(ctx context.Context, pods typedcorev1.PodInterface, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, calicoSettle, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = pods.Get(ctx, name, metav1.GetOptions{})
		// An error (the API server busy) is asked again.
		return err == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s does not run within %s", name, calicoSettle)
	}
	return pod, nil
}

// deletePod deletes pod name, if there is one, and waits until it is gone.
func deletePod(ctx context.Context, pods typedcorev1.PodInterface, name string) error {
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	_, err := observe.WaitGone(ctx, pods, name)
	return err
}

// bothAPIs moves aws's semaphore-policy to crd.projectcalico.org/v1 (helm upgrade
// --reuse-values), where the Calico API server stores the sets it wrote: the forwarders must
// stay admitted, and the set be the same object, semaphore-policy's still. Then it rolls the
// release back, and records the new controller pods.
func (c *calicoRun) bothAPIs(ctx context.Context) []string {
	switched := time.Now()
	if err := c.l.UpgradeUmbrella(ctx, layout.FluentdCluster, "policy.calicoAPI="+policycalico.APICRD); err != nil {
		return []string{err.Error()}
	}
	problems := c.onCRDs(ctx, switched)
	if err := c.l.RollbackUmbrella(ctx, layout.FluentdCluster); err != nil {
		return append(problems, err.Error())
	}
	if p := c.policyRolledOut(ctx, layout.CalicoAPI); p != "" {
		return append(problems, p)
	}
	fmt.Fprintf(c.l.Out(), "  rolled back: %s's semaphore-policy writes %s again\n", layout.FluentdCluster, layout.CalicoAPI)
	if err := c.l.RecordPods(ctx); err != nil {
		return append(problems, err.Error())
	}
	if err := c.l.ReloadPrometheus(ctx); err != nil {
		return append(problems, err.Error())
	}
	return problems
}

// onCRDs checks the lab with semaphore-policy on crd.projectcalico.org/v1 since switched.
func (c *calicoRun) onCRDs(ctx context.Context, switched time.Time) []string {
	if p := c.policyRolledOut(ctx, policycalico.APICRD); p != "" {
		return []string{p}
	}
	rolled := time.Now()
	fmt.Fprintf(c.l.Out(), "  %s's semaphore-policy writes %s: rolled out %s after the upgrade\n", layout.FluentdCluster, policycalico.APICRD, rolled.Sub(switched).Round(100*time.Millisecond))
	problems := c.admitted(ctx, "with semaphore-policy on "+policycalico.APICRD, rolled)
	set, err := c.forwarderSet(ctx, policycalico.APICRD)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: the forwarders' set in %s: %v", layout.FluentdCluster, policycalico.APICRD, err))
	}
	nets, _, _ := unstructured.NestedStringSlice(set.Object, "spec", "nets")
	lifted, _ := policycalico.LiftLabels(set.DeepCopy())
	fmt.Fprintf(c.l.Out(), "  %s %s: nets %s, created %s, its own labels %v, as Calico reads them %v\n", policycalico.APICRD, set.GetName(), strings.Join(nets, ", "),
		set.GetCreationTimestamp().Format(time.TimeOnly), set.GetLabels(), lifted.(*unstructured.Unstructured).GetLabels())
	return append(problems, storedSetProblems(set, c.rec.PodIPs(layout.ForwarderCluster, layout.ForwarderName), switched)...)
}

// storedSetProblems compares the forwarders' set as crd.projectcalico.org/v1 holds it with what
// it must be: the forwarders' addresses, created before switched (the object semaphore-policy
// wrote through projectcalico.org/v3, not a new one), with the labels that make it
// semaphore-policy's on that API.
func storedSetProblems(set *unstructured.Unstructured, ips []string, switched time.Time) []string {
	var problems, want []string
	for _, ip := range ips {
		want = append(want, hostNet(ip))
	}
	slices.Sort(want)
	nets, _, _ := unstructured.NestedStringSlice(set.Object, "spec", "nets")
	if !slices.Equal(slices.Sorted(slices.Values(nets)), want) {
		problems = append(problems, fmt.Sprintf("%s %s holds %v, want %v", policycalico.APICRD, set.GetName(), nets, want))
	}
	if created := set.GetCreationTimestamp().Time; !created.Before(switched) {
		problems = append(problems, fmt.Sprintf("%s %s was created at %s, after the switch: not the object written through %s", policycalico.APICRD, set.GetName(), created.Format(time.TimeOnly), policycalico.APIv3))
	}
	// As semaphore-policy reads it: the Calico API server keeps the labels in an annotation.
	lifted, _ := policycalico.LiftLabels(set.DeepCopy())
	labels := lifted.(*unstructured.Unstructured).GetLabels()
	if src, ok := netset.SourceOf(labels); !ok || src != forwarderSource || !ownership.IsManagedBy(labels, ownership.Policy) {
		problems = append(problems, fmt.Sprintf("%s %s has labels %v, not %s's of %s: semaphore-policy on %s takes it for another's set (a name clash) and leaves it alone",
			policycalico.APICRD, set.GetName(), labels, ownership.Policy, forwarderSource, policycalico.APICRD))
	}
	return problems
}

// policyRolledOut waits until aws's semaphore-policy has rolled out, writing to api, and says
// what it waits for when it does not in time.
func (c *calicoRun) policyRolledOut(ctx context.Context, api string) string {
	client := c.l.Cluster(layout.FluentdCluster).Client
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, calicoSettle, true, func(ctx context.Context) (bool, error) {
		last = observe.WorkloadPending(ctx, client, ownership.Policy)
		if last == "" {
			last = writesTo(ctx, client, api)
		}
		return last == "", nil
	})
	if err != nil {
		return fmt.Sprintf("%s: semaphore-policy did not roll out on %s in %s: %s", layout.FluentdCluster, api, calicoSettle, last)
	}
	return ""
}

// writesTo says how semaphore-policy's Deployment differs from one writing to api, "" when it
// does not.
func writesTo(ctx context.Context, client kubernetes.Interface, api string) string {
	d, err := client.AppsV1().Deployments(layout.SemaphoreNamespace).Get(ctx, ownership.Policy, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		for _, e := range ctr.Env {
			if e.Name == calicoAPIEnv && e.Value == api {
				return ""
			}
		}
	}
	return calicoAPIEnv + " is not " + api
}
