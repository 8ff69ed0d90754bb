package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// The soak (`bash ci/lab soak`, `make soak`): the lab under churn for a while, then the mesh
// must be exactly what the clusters hold, with the controllers' goroutines and memory within
// bounds and every alert quiet. The churn, all at once:
//   - every soakChurnEvery, one change in a random cluster: a workload scaled (pods created and
//     deleted: in mirrored and global Services, in network sets, one set that comes and goes), a
//     mirrored Service created, deleted or given another port, a global Service created in or
//     deleted from the cluster;
//   - every minute a remote cut (the other clusters' packets to its API server dropped on the
//     underlay: the controllers' watches hang, as behind a lost link) for soakCutFor, and
//     restored;
//   - every two minutes a controller pod deleted: the leader of a Deployment's Lease, or a
//     semaphore-wireguard pod, in turn.
//
// The churn's objects live in soakNamespace of every cluster, and go with it at the end.

const (
	soakNamespace = "soak"
	// soakApp's pods back the mirrored and global Services and form a network set; soakBatch's
	// form a set that empties and fills again (zero replicas: no set).
	soakApp              = "soak-app"
	soakBatch            = "soak-batch"
	soakPort       int32 = 8080
	soakChurnEvery       = 2 * time.Second
	soakCutEvery         = time.Minute
	soakCutFor           = 20 * time.Second
	soakKillEvery        = 2 * time.Minute
	// soakMaxServices is how many mirrored Services a cluster holds at most; soakGlobals how
	// many global services there are (each in any of the clusters).
	soakMaxServices = 4
	soakGlobals     = 3
	// soakSettle bounds the wait for the clusters' workloads after the churn, soakConverge the
	// wait for the mesh to equal them, soakQuiet the wait for the alerts to be quiet again.
	soakSettle   = 3 * time.Minute
	soakConverge = 2 * time.Minute
	soakQuiet    = 5 * time.Minute
)

// soakRun is one soak: what the churn holds in each cluster, and what it did.
type soakRun struct {
	l   *lab
	rng *rand.Rand

	// services are the mirrored Services the churn made, by cluster; globals the global
	// services each cluster has.
	services map[string][]string
	globals  map[string][]string
	serial   int

	mu       sync.Mutex // guards what the pod deletions (in goroutines) add
	counts   map[string]int
	problems []string
	kills    sync.WaitGroup
	// rediscover serializes the pod deletions' rediscoverControllers.
	rediscover sync.Mutex
}

func (s *soakRun) count(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[what]++
}

func (s *soakRun) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.l.logf("soak: %s", msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, msg)
}

// soak runs the churn for d, then checks the mesh, the footprint and the alerts, and returns
// the problems.
func (l *lab) soak(ctx context.Context, d time.Duration) []string {
	st := l.snapshot()
	if st.nodesSkipped() || st.Prometheus == nil {
		return []string{"the soak needs the nodes (root) and Prometheus: nothing runs to soak"}
	}
	s := &soakRun{l: l, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)),
		services: map[string][]string{}, globals: map[string][]string{}, counts: map[string]int{}}
	if err := s.createWorkloads(ctx); err != nil {
		return []string{fmt.Sprintf("soak workloads: %v", err)}
	}
	before, err := l.footprint(ctx)
	if err != nil {
		return []string{fmt.Sprintf("the controllers' footprint before the soak: %v", err)}
	}
	start := time.Now()
	l.logf("soaking for %s: a change every %s, a remote cut for %s every %s, a controller pod deleted every %s",
		d, soakChurnEvery, soakCutFor, soakCutEvery, soakKillEvery)
	s.churn(ctx, d)
	s.kills.Wait()
	l.logf("churn over: %s", s.summary())
	if ctx.Err() != nil {
		return []string{"interrupted"}
	}
	s.verify(ctx, start, before)
	return s.problems
}

// summary says what the churn did.
func (s *soakRun) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", s.counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// churn changes the clusters until d has passed, cutting remotes and deleting controller pods
// on the way.
func (s *soakRun) churn(ctx context.Context, d time.Duration) {
	start := time.Now()
	nextCut, nextKill := start.Add(soakCutEvery/2), start.Add(soakKillEvery/2)
	var restore func()
	var restoreAt time.Time
	cuts, kills := 0, 0
	tick := time.NewTicker(soakChurnEvery)
	defer tick.Stop()
	for time.Since(start) < d && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		now := time.Now()
		if restore != nil && now.After(restoreAt) {
			restore()
			restore = nil
		}
		if restore == nil && now.After(nextCut) {
			remote := clusterNames()[cuts%len(clusterSpecs)]
			restore, restoreAt = s.cut(remote), now.Add(soakCutFor)
			cuts++
			nextCut = nextCut.Add(soakCutEvery)
		}
		if now.After(nextKill) {
			s.kill(ctx, kills)
			kills++
			nextKill = nextKill.Add(soakKillEvery)
		}
		s.change(ctx)
	}
	if restore != nil {
		restore()
	}
}

// cut drops the packets of every other cluster's nodes and pods to remote's API server, on
// the underlay where it listens, and returns what restores them.
func (s *soakRun) cut(remote string) (restore func()) {
	api := specOf(remote).APIAddr
	var rules [][]string
	for _, other := range remotesOf(remote) {
		sources := []string{specOf(other).PodCIDR}
		for _, n := range s.l.snapshot().Nodes.Nodes {
			if n.Cluster == other {
				sources = append(sources, n.Underlay)
			}
		}
		for _, src := range sources {
			rules = append(rules, []string{"INPUT", "-s", src, "-d", api, "-j", "DROP"})
		}
	}
	var added [][]string
	for _, r := range rules {
		if err := underlayIptables(append([]string{"-I"}, r...)...); err != nil {
			s.problem("cutting %s: %v", remote, err)
			continue
		}
		added = append(added, r)
	}
	s.count("remote cuts")
	s.l.logf("soak: %s cut off from %s", remote, strings.Join(remotesOf(remote), " and "))
	return func() {
		for _, r := range added {
			if err := underlayIptables(append([]string{"-D"}, r...)...); err != nil {
				s.problem("restoring %s: %v", remote, err)
			}
		}
		s.l.logf("soak: %s restored", remote)
	}
}

// underlayIptables runs iptables in the underlay's network namespace.
func underlayIptables(args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", underlayNetns, "iptables", "-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// soakVictims are the controllers the soak deletes a pod of, in turn: a cluster's component.
var soakVictims = []struct{ component, cluster string }{
	{"semaphore-service-mirror", "aws"}, {"semaphore-policy", "gcp"}, {wireguardComponent, "merit"},
	{"semaphore-service-mirror", "gcp"}, {"semaphore-policy", "merit"}, {wireguardComponent, "aws"},
	{"semaphore-service-mirror", "merit"}, {"semaphore-policy", "aws"}, {wireguardComponent, "gcp"},
}

// kill deletes the i-th victim's pod (the Lease holder when the component elects one) and, in
// the background, waits for its replacement and points the port forwards and Prometheus at it.
func (s *soakRun) kill(ctx context.Context, i int) {
	v := soakVictims[i%len(soakVictims)]
	st := s.l.snapshot()
	var victim *ControllerState
	for _, c := range st.Controllers {
		if c.Component != v.component || c.Cluster != v.cluster {
			continue
		}
		if victim == nil || (c.Lease != "" && leaseHolder(ctx, st, c.Cluster, c.Lease) == c.PodName) {
			victim = &c
		}
	}
	if victim == nil {
		s.problem("no %s pod in %s to delete", v.component, v.cluster)
		return
	}
	client := s.l.clusters[v.cluster].Client
	if err := client.CoreV1().Pods(semaphoreNamespace).Delete(ctx, victim.PodName, metav1.DeleteOptions{}); err != nil {
		s.problem("deleting %s's pod %s in %s: %v", v.component, victim.PodName, v.cluster, err)
		return
	}
	s.count("controller pods deleted")
	s.l.logf("soak: deleted %s's pod %s in %s", v.component, victim.PodName, v.cluster)
	s.kills.Go(func() {
		start := time.Now()
		if victim.Lease != "" {
			s.waitTakeover(ctx, *victim)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, soakSettle, true, func(ctx context.Context) (bool, error) {
			pod, err := client.CoreV1().Pods(semaphoreNamespace).Get(ctx, victim.PodName, metav1.GetOptions{})
			gone := apierrors.IsNotFound(err) || (err == nil && string(pod.UID) != victim.PodUID)
			return gone && rolloutPendingOf(ctx, client, v.component) == "", nil
		})
		if err != nil {
			s.problem("%s in %s not back %s after its pod was deleted: %s", v.component, v.cluster, soakSettle, rolloutPendingOf(ctx, client, v.component))
			return
		}
		s.l.logf("soak: %s in %s back in %s", v.component, v.cluster, time.Since(start).Round(100*time.Millisecond))
		s.rediscover.Lock()
		defer s.rediscover.Unlock()
		if err := s.l.rediscoverControllers(ctx); err != nil {
			s.problem("finding the controllers again: %v", err)
		}
	})
}

// waitTakeover waits until another pod than victim holds victim's Lease, and says how long
// that took: the leader failover.
func (s *soakRun) waitTakeover(ctx context.Context, victim ControllerState) {
	start := time.Now()
	holder := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, soakSettle, true, func(ctx context.Context) (bool, error) {
		holder = leaseHolder(ctx, s.l.snapshot(), victim.Cluster, victim.Lease)
		return holder != "" && holder != victim.PodName, nil
	})
	if err != nil {
		s.problem("%s in %s: no other pod took Lease %s within %s of its holder's deletion (holder %q)", victim.Component, victim.Cluster, victim.Lease, soakSettle, holder)
		return
	}
	s.l.logf("soak: %s in %s: %s took the Lease in %s", victim.Component, victim.Cluster, holder, time.Since(start).Round(100*time.Millisecond))
}

// rolloutPendingOf says what keeps component's workload from being fully available ("" when
// it is): a DaemonSet for semaphore-wireguard, a Deployment for the others.
func rolloutPendingOf(ctx context.Context, client kubernetes.Interface, component string) string {
	if component == wireguardComponent {
		d, err := client.AppsV1().DaemonSets(semaphoreNamespace).Get(ctx, component, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return daemonSetPending(d)
	}
	d, err := client.AppsV1().Deployments(semaphoreNamespace).Get(ctx, component, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return deploymentPending(d)
}

// rediscoverControllers records the pods again (new controller pods get a port forward) and
// points Prometheus at the controllers that run now.
func (l *lab) rediscoverControllers(ctx context.Context) error {
	if err := l.recordPods(ctx); err != nil {
		return err
	}
	return l.reloadPrometheus(ctx)
}

// createWorkloads creates soakApp and soakBatch in every cluster.
func (s *soakRun) createWorkloads(ctx context.Context) error {
	for _, name := range clusterNames() {
		c := s.l.clusters[name]
		for _, w := range []struct {
			name     string
			replicas int32
		}{{soakApp, 2}, {soakBatch, 1}} {
			ctr := s.l.sampleContainer(w.name, "serve", "-listen", fmt.Sprintf(":%d", soakPort))
			ctr.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: soakPort, Protocol: corev1.ProtocolTCP}}
			ctr.ReadinessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				PeriodSeconds: 1,
			}
			if err := s.l.createSampleDeployment(ctx, c, soakNamespace, w.name, w.replicas, map[string]string{policyLabel: w.name}, nil, ctr); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// change makes one random change in a random cluster.
func (s *soakRun) change(ctx context.Context) {
	cluster := clusterNames()[s.rng.IntN(len(clusterSpecs))]
	c := s.l.clusters[cluster].Client
	var what string
	var err error
	switch op := s.rng.IntN(6); {
	case op == 0:
		what, err = "scales", s.scale(ctx, cluster, soakApp, 1+s.rng.Int32N(3))
	case op == 1:
		what, err = "scales", s.scale(ctx, cluster, soakBatch, s.rng.Int32N(3))
	case op == 2 && len(s.services[cluster]) < soakMaxServices:
		s.serial++
		name := fmt.Sprintf("soak-%d", s.serial)
		svc := soakService(name, map[string]string{mirrorLabel: "true"})
		if _, err = c.CoreV1().Services(soakNamespace).Create(ctx, svc, metav1.CreateOptions{}); err == nil {
			s.services[cluster] = append(s.services[cluster], name)
		}
		what = "mirrored Services created"
	case (op == 2 || op == 3) && len(s.services[cluster]) > 0:
		i := s.rng.IntN(len(s.services[cluster]))
		err = c.CoreV1().Services(soakNamespace).Delete(ctx, s.services[cluster][i], metav1.DeleteOptions{})
		s.services[cluster] = slices.Delete(s.services[cluster], i, i+1)
		what = "mirrored Services deleted"
	case op == 4 && len(s.services[cluster]) > 0:
		name := s.services[cluster][s.rng.IntN(len(s.services[cluster]))]
		patch := fmt.Appendf(nil, `{"spec":{"ports":[{"name":"http","port":%d,"targetPort":"http","protocol":"TCP"}]}}`, 8000+s.rng.IntN(1000))
		// A merge patch replaces the list (a strategic one would add a port, keyed by number).
		_, err = c.CoreV1().Services(soakNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		what = "mirrored Services changed"
	case op == 5:
		what, err = s.toggleGlobal(ctx, cluster)
	default:
		return
	}
	s.count(what)
	if err != nil {
		s.problem("%s: %s: %v", cluster, what, err)
	}
}

// scale sets the replicas of workload in cluster.
func (s *soakRun) scale(ctx context.Context, cluster, workload string, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	_, err := s.l.clusters[cluster].Client.AppsV1().Deployments(soakNamespace).Patch(ctx, workload, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// toggleGlobal creates one of the global services in cluster, or deletes it when the cluster
// has it.
func (s *soakRun) toggleGlobal(ctx context.Context, cluster string) (string, error) {
	c := s.l.clusters[cluster].Client
	name := fmt.Sprintf("soak-global-%d", s.rng.IntN(soakGlobals))
	if i := slices.Index(s.globals[cluster], name); i >= 0 {
		s.globals[cluster] = slices.Delete(s.globals[cluster], i, i+1)
		return "global Services deleted", c.CoreV1().Services(soakNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	svc := soakService(name, map[string]string{global.LabelGlobalService: "true"})
	if _, err := c.CoreV1().Services(soakNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return "global Services created", err
	}
	s.globals[cluster] = append(s.globals[cluster], name)
	return "global Services created", nil
}

// soakService is a Service of soakApp's pods labelled with extra.
func soakService(name string, extra map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: extra},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": soakApp},
			Ports:    []corev1.ServicePort{{Name: "http", Port: soakPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
}
